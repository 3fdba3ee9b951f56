"""CPU seconds of one recovery, split by component of the exact path.

    python benchmarks/components.py 8 4            # d = 8, H = 4, paper schedule, seed 0
    python benchmarks/components.py 16 8 lean

Wraps the learner's building blocks (this process only) and adds up the process
time spent in each: the oracle calls, reconstruction of the copy functions,
partial fractions (poles and residues), coprime bases, exponent vectors, the
log-space solve, the weight consistency checks, the pre-query rank checks, the
head matching and the predicted matching configurations. (On this checkout the
coprime bases are computed inside ``coprime_exponents``, which calls
``coprime_base`` only on the few pieces that ``factor_smooth`` leaves, so the
"coprime bases" line is a part of it.) Components nest (reconstruction and
partial fractions are both inside "copy function -> terms"), so the column does
not add up to the total. The figures of docs/performance.md come from this
script; run it on an older checkout (PYTHONPATH=...) for the "before" column.
"""

from __future__ import annotations

import functools
import sys
import time

import exactlearn.chain as chain_module
import exactlearn.exactfield as field_module
import exactlearn.fastlink as fastlink_module
import exactlearn.learn  # noqa: F401  (the module, shadowed by the function in the package)
import exactlearn.logspace as logspace_module
import exactlearn.matching as matching_module
import exactlearn.ratfun as ratfun_module
from exactlearn import MultiHeadAttention, Oracle, learn

learn_module = sys.modules["exactlearn.learn"]
spent: dict[str, float] = {}


def wrap(owner, name: str, label: str) -> None:
    fn = getattr(owner, name, None)
    if fn is None:  # an older or newer checkout without this function
        return

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.process_time() - start

    setattr(owner, name, timed)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    d, heads = int(argv[0]), int(argv[1])
    schedule = argv[2] if len(argv) > 2 else "paper"
    wrap(field_module.ExactRationals, "copy_terms", "copy function -> terms (both below)")
    wrap(field_module, "reconstruct_nn", "  reconstruction")
    wrap(field_module, "copy_terms", "  partial fractions (poles, residues)")
    if hasattr(ratfun_module, "_linear_factors"):
        wrap(ratfun_module, "_linear_factors", "    factoring the denominator")
    else:  # an older checkout
        wrap(ratfun_module, "_simple_rational_roots", "    factoring the denominator")
    wrap(ratfun_module, "_terms_from_factors", "    residues from the linear factors")
    wrap(field_module.ExactRationals, "solve_weights", "log-space solve (incl. bases, exponents)")
    wrap(logspace_module, "coprime_exponents", "  coprime bases and exponent vectors")
    wrap(logspace_module, "coprime_base", "  coprime bases")  # an older checkout: two separate steps
    wrap(logspace_module, "exponent_vector", "  exponent vectors")
    wrap(field_module.ExactRationals, "weights_agree", "weight consistency checks")  # before main's merge
    wrap(field_module.ExactRationals, "rho", "weight consistency checks")  # predicted poles, main's Field.rho
    wrap(field_module.ExactRationals, "solve_values", "value solve")
    wrap(chain_module.TokenChain, "pre_query_ok", "pre-query checks")
    wrap(matching_module, "perfect_matchings", "head matching")
    wrap(field_module.ExactRationals, "link_terms", "predicted matching configurations")
    wrap(fastlink_module, "_fits", "  exact check of the prediction")

    model = MultiHeadAttention.random(d, heads, seed=0)

    oracle = Oracle(model)
    start = time.process_time()
    rec = learn(oracle, d, heads=heads, schedule=schedule)
    total = time.process_time() - start
    spent["oracle"] = oracle.cpu_seconds
    exact = rec.model == model.canonical()
    inside = spent.get("oracle", 0.0)
    print(f"d = {d}, H = {heads}, {schedule}: {'EXACT' if exact else 'WRONG'}, {oracle.queries} queries")
    print(f"  total {total:.3f} s CPU, oracle {inside:.3f}, learner {total - inside:.3f}")
    for label, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        if label != "oracle":
            print(f"  {label:42s} {seconds:8.3f}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
