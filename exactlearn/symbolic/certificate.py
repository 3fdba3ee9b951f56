"""The generic certificate: the schedule run once with every weight an indeterminate.

:func:`certify` runs the one schedule of :mod:`exactlearn.learn` over the field
``Q(E, V)`` (:class:`~exactlearn.symbolic.field.SymbolicField`) against the
indeterminate model (:class:`~exactlearn.symbolic.model.SymbolicModel`) and
returns a :class:`Certificate`: whether the recovered heads are the
indeterminate heads identically, the query counts read from the oracle's log,
the exceptional polynomials (every divisor and every element the run relied on
being nonzero, factored over ``Q``) and a numeric spot check off them. Off the
exceptional set the numeric learner with the same seed asks the same queries
and recovers the model exactly; docs/generic-certificate.md states what is
recorded, what is checked and the argument.

>>> cert = certify(2, 1, check_point=False)
>>> cert.passed, cert.queries == cert.formula, cert.configurations[1][2]
(True, True, 'measurement')
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq, fmpz

from .. import display
from ..errors import RecoveryError
from ..exact import brief
from ..learn import DEFAULT_TOKEN_BOUND, learn, run_schedule
from ..limits import DEFAULT_LIMITS, Limits, check_certify
from ..model import MultiHeadAttention
from ..oracle import Oracle
from ..schedule import Schedule, as_schedule, max_query_length
from ..validate import integer
from ..validate import seed as check_seed
from .field import SymbolicField, e_name
from .ledger import KINDS
from .model import SymbolicModel, SymbolicOracle

__all__ = ["certify", "Certificate", "ExceptionalFactor", "SpotCheck", "CERTIFICATE_FORMAT"]

CERTIFICATE_FORMAT = "exactlearn.certificate/1"
_WHERE_KEPT = 4


def primitive(poly) -> Any:
    """``poly`` scaled to integer coefficients with gcd 1 and a positive leading coefficient."""
    coeffs = list(poly.coeffs())
    den = fmpz(1)
    for c in coeffs:
        den = den * c.q // den.gcd(c.q)
    num = fmpz(0)
    for c in coeffs:
        num = num.gcd((c * den).p)
    out = poly * fmpq(den, num)
    return -out if out.leading_coefficient() < 0 else out


@dataclass(repr=False)
class ExceptionalFactor:
    """One irreducible polynomial of the exceptional set and why it was recorded.

    ``poly`` is primitive (integer coefficients, gcd 1, positive leading
    coefficient); ``occurrences`` lists ``(kind, where)`` for every ledger
    record it divides (kinds in :data:`~exactlearn.symbolic.ledger.KINDS`;
    ``where`` names the copy function ``(x, z)`` or the comparison).
    """

    poly: Any
    degree: int
    occurrences: list[tuple[str, str]]
    n_e: int = 0  # the first n_e generators of the context are the E's

    @property
    def kinds(self) -> Counter:
        """How many records of each kind this factor divides."""
        return Counter(k for k, _ in self.occurrences)

    @property
    def where(self) -> list[str]:
        """The distinct places, in the order met."""
        return list(dict.fromkeys(w for _, w in self.occurrences))

    def recorded(self, kind: str, where: str = "") -> bool:
        """Was this factor recorded with ``kind`` at a place whose text contains ``where``?"""
        return any(k == kind and where in w for k, w in self.occurrences)

    @property
    def positive_on_domain(self) -> bool:
        """True iff the polynomial involves only ``E``'s and has positive coefficients.

        Then it is positive wherever every ``E > 0``: its zero set misses the
        real parameter domain, so it excludes no model.
        """
        if any(c <= 0 for c in self.poly.coeffs()):
            return False
        return all(not any(m[self.n_e:]) for m in self.poly.monoms())

    def __repr__(self) -> str:
        return display.summary("ExceptionalFactor", f"degree {self.degree}",
                               [brief(self.poly, 60), display.plural(len(self.occurrences), "record")])

    def to_dict(self) -> dict:
        return {
            "poly": str(self.poly),
            "degree": self.degree,
            "terms": len(self.poly),
            "positive_on_domain": self.positive_on_domain,
            "kinds": dict(sorted(self.kinds.items())),
            "where": self.where[:_WHERE_KEPT],
            "records": len(self.occurrences),
        }


@dataclass
class SpotCheck:
    """The numeric learner at one rational point off the exceptional set."""

    point: dict[str, str]
    exact: bool
    same_tokens: bool
    redraws: int
    queries: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.exact and self.same_tokens and self.redraws == 0

    def to_dict(self) -> dict:
        return {"ok": self.ok, "exact": self.exact, "same_tokens": self.same_tokens, "redraws": self.redraws,
                "queries": self.queries, "error": self.error, "point": self.point}


@dataclass(kw_only=True, repr=False)
class Certificate(display.Shown):
    """The outcome of :func:`certify`. :attr:`passed` is computed from the measured figures."""

    d: int
    heads: int
    seed: Any
    token_bound: int
    schedule: Schedule
    identity: bool
    permutation: list[int] | None
    recovered: list[dict]
    queries: int  # the symbolic oracle's log
    max_length: int  # the symbolic oracle's log
    learner_queries: int
    redraws: int
    formula: int
    formula_max_length: int
    factors: list[ExceptionalFactor]
    records: int
    trivial: int
    all_nonzero: bool
    configurations: list[tuple[tuple[int, ...], tuple[int, ...], str]]  # (x, z, kind), the chain's order
    spot_check: SpotCheck | None
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    links: int = 0  # links paired by a unique perfect matching (each with its matching configuration)
    dropped: int = 0  # configurations answered and then dropped by the run (none on the certified path)
    fallback: bool = False  # lean schedule: later configurations linked because two learned v were equal

    @property
    def counts_ok(self) -> bool:
        return (self.queries == self.formula == self.learner_queries
                and self.max_length == self.formula_max_length)

    @property
    def passed(self) -> bool:
        return (
            self.error is None
            and self.identity
            and self.counts_ok
            and self.redraws == 0
            and self.dropped == 0
            and not self.fallback
            and self.all_nonzero
            and (self.spot_check is None or self.spot_check.ok)
        )

    @property
    def degrees(self) -> Counter:
        """How many exceptional polynomials have each total degree."""
        return Counter(f.degree for f in self.factors)

    @property
    def effective(self) -> list[ExceptionalFactor]:
        """The exceptional polynomials that can vanish on the domain
        (not :attr:`~ExceptionalFactor.positive_on_domain`)."""
        return [f for f in self.factors if not f.positive_on_domain]

    @property
    def kinds(self) -> Counter:
        """How many exceptional polynomials were recorded (at least once) for each reason."""
        out: Counter = Counter()
        for f in self.factors:
            for k in f.kinds:
                out[k] += 1
        return out

    def to_dict(self) -> dict:
        return {
            "format": CERTIFICATE_FORMAT,
            "passed": self.passed,
            "d": self.d,
            "heads": self.heads,
            "seed": self.seed,
            "token_bound": self.token_bound,
            "schedule": str(self.schedule),
            "identity": self.identity,
            "permutation": self.permutation,
            "recovered": self.recovered,
            "queries": self.queries,
            "formula": self.formula,
            "learner_queries": self.learner_queries,
            "max_length": self.max_length,
            "formula_max_length": self.formula_max_length,
            "redraws": self.redraws,
            "links": self.links,
            "dropped": self.dropped,
            "fallback": self.fallback,
            "configurations": [{"x": list(x), "z": list(z), "kind": k} for x, z, k in self.configurations],
            "exceptional": {
                "count": len(self.factors),
                "can_vanish_on_domain": len(self.effective),
                "all_nonzero": self.all_nonzero,
                "records": self.records,
                "trivial_constants": self.trivial,
                "degrees": {str(k): v for k, v in sorted(self.degrees.items())},
                "kinds": dict(sorted(self.kinds.items())),
                "kind_meanings": dict(KINDS),
                "polynomials": [f.to_dict() for f in self.factors],
            },
            "spot_check": self.spot_check.to_dict() if self.spot_check else None,
            "seconds": dict(self.seconds),
            "error": self.error,
        }

    def __repr__(self) -> str:
        details = ["passed" if self.passed else "NOT passed",
                   f"{self.queries} queries (formula {self.formula})",
                   f"max length {self.max_length} (formula {self.formula_max_length})",
                   display.plural(self.redraws, "redraw"),
                   display.plural(len(self.factors), "exceptional factor")]
        return display.summary("Certificate", f"d={self.d} H={self.heads}", details)

    def _lines(self) -> list[str]:
        """The summary, then what it rests on: identity, exceptional factors, the spot check."""
        degrees = ", ".join(f"{n} of degree {k}" for k, n in sorted(self.degrees.items()))
        return display.wrapped(repr(self)) + [
            f"identity: {self.identity} (permutation {self.permutation})",
            f"exceptional factors: {len(self.factors)}, {len(self.effective)} can vanish on the domain",
            *display.wrapped(f"by degree: {degrees or 'none'}"),
            f"spot check: {'not run' if self.spot_check is None else self.spot_check.ok}"] + (
            display.wrapped(f"error: {self.error}") if self.error else [])


def exceptional_factors(ledger, n_e: int = 0) -> tuple[list[ExceptionalFactor], bool]:
    """Factor every recorded polynomial, deduplicate the irreducible factors.

    Returns ``(factors, all_nonzero)``: factors sorted by degree then text;
    ``all_nonzero`` is True iff every factor is a nonconstant, nonzero polynomial
    (a zero one would mean the run relied on something identically false).
    """
    by_text: dict[str, list] = {}
    for rec in ledger.records:
        by_text.setdefault(str(rec.poly), []).append(rec)
    factors: dict[str, ExceptionalFactor] = {}
    all_nonzero = True
    for recs in by_text.values():
        poly = recs[0].poly
        if poly.is_zero():
            all_nonzero = False
            continue
        _, parts = poly.factor()
        for f, _mult in parts:
            f = primitive(f)
            key = str(f)
            entry = factors.get(key)
            if entry is None:
                entry = factors[key] = ExceptionalFactor(f, int(f.total_degree()), [], n_e)
            entry.occurrences.extend((rec.kind, rec.where) for rec in recs)
    out = sorted(factors.values(), key=lambda f: (f.degree, len(f.poly), str(f.poly)))
    for f in out:
        if f.poly.is_zero() or f.degree < 1:
            all_nonzero = False
    return out, all_nonzero


def _identity(F: SymbolicField, result) -> tuple[bool, list[int] | None]:
    """Is each recovered head an indeterminate head, bijectively? Returns ``(ok, permutation)``."""
    d, H = F.d, F.heads
    perm: list[int] = []
    for W, v in result:
        hits = [g for g in range(H)
                if W.is_log_of([[e_name(g, a, b) for b in range(d)] for a in range(d)])
                and all(v[a] == F.V[g][a] for a in range(d))]
        if len(hits) != 1:
            return False, None
        perm.append(hits[0])
    return len(result) == H and sorted(perm) == list(range(H)), perm


def _random_point(F: SymbolicField, factors: list[ExceptionalFactor], rng: random.Random, height: int = 30):
    """A rational point with positive ``E`` at which no exceptional polynomial vanishes."""
    for _ in range(100):
        values = [fmpq(rng.randint(1, height), rng.randint(1, height)) for _ in F.e_names]
        values += [fmpq(rng.randint(-height, height), rng.randint(1, height)) for _ in F.v_names]
        if all(f.poly(*values) != 0 for f in factors):
            return values
    raise RuntimeError("no point off the exceptional set found in 100 draws")  # pragma: no cover


def chain(configurations) -> list[tuple[tuple[int, ...], tuple[int, ...], str]]:
    """``(x, z, kind)`` of a run's configurations (``run.configs`` then ``run.links``), in order.

    ``kind`` is ``measurement``, ``predicted`` (lean), or ``matching (shared x)`` /
    ``matching (shared a)`` for the matching configuration of a link.
    """
    return [(c.x, c.z, str(c.kind) if c.link is None else f"{c.kind} (shared {c.link})")
            for c in configurations]


def specialise(F: SymbolicField, values) -> MultiHeadAttention:
    """The numeric model at the point ``values`` (ordered as ``F.ctx`` generators)."""
    d, H = F.d, F.heads
    n_e = len(F.e_names)
    exp_Ws = [[[values[(h * d + a) * d + b] for b in range(d)] for a in range(d)] for h in range(H)]
    vs = [[values[n_e + h * d + a] for a in range(d)] for h in range(H)]
    return MultiHeadAttention.from_lists(exp_Ws, vs)


def spot_check(F: SymbolicField, factors, configurations, *, seed, token_bound,
               schedule: Schedule) -> SpotCheck:
    """Run :func:`exactlearn.learn` at a random point off the exceptional set (same seed)."""
    rng = random.Random(f"exactlearn.certify.spot:{F.d}:{F.heads}:{seed}")
    values = _random_point(F, factors, rng)
    model = specialise(F, values)
    point = {name: str(v) for name, v in zip(F.e_names + F.v_names, values)}
    try:
        rec = learn(Oracle(model), F.d, heads=F.heads, seed=seed, token_bound=token_bound, schedule=schedule)
    except RecoveryError as exc:
        return SpotCheck(point, False, False, -1, -1, f"{type(exc).__name__}: {exc}")
    return SpotCheck(point, rec.model == model.canonical(), chain(rec.configurations) == configurations,
                     rec.redraws, rec.queries)


def certify(d: int, heads: int, *, seed: Any = 0, token_bound: int = DEFAULT_TOKEN_BOUND,
            schedule: Schedule | str = Schedule.PAPER, check_point: bool = True,
            progress: Callable[[int, int], None] | None = None,
            limits: Limits = DEFAULT_LIMITS) -> Certificate:
    """Run the schedule over ``Q(E, V)`` for width ``d`` and ``heads`` heads and certify it.

    ``seed`` and ``token_bound`` are those of :func:`exactlearn.learn`: the
    certificate speaks about the numeric learner run with the same values.
    ``check_point`` adds the numeric spot check (:class:`SpotCheck`);
    ``progress(queries_so_far, planned)`` is called as the symbolic run queries.
    Sizes whose estimated cost exceeds ``limits`` (``certify_d``, ``certify_heads``,
    ``certify_seconds``: the run's cost explodes with ``heads``) are refused first.

    >>> cert = certify(1, 2)
    >>> cert.passed, cert.identity, cert.queries, cert.max_length
    (True, True, 5, 5)
    """
    for name, value in (("d", d), ("heads", heads), ("token_bound", token_bound)):
        integer(name, value)
    check_certify(d, heads, limits)
    check_seed(seed)
    plan = as_schedule(schedule)
    start, cpu_start = time.perf_counter(), time.process_time()
    F = SymbolicField(d, heads)
    oracle = SymbolicOracle(SymbolicModel(F))
    formula = plan.query_count(d, heads)
    seconds: dict[str, float] = {}
    try:
        run = run_schedule(oracle, d, heads, field=F, seed=seed, schedule=plan, token_bound=token_bound,
                           progress=progress)
    except RecoveryError as exc:
        seconds["total"] = time.perf_counter() - start
        return Certificate(
            d=d, heads=heads, seed=seed, token_bound=token_bound, schedule=plan,
            identity=False, permutation=None, recovered=[],
            queries=oracle.queries, max_length=oracle.max_length, learner_queries=-1, redraws=-1,
            formula=formula, formula_max_length=max_query_length(heads),
            factors=[], records=len(F.ledger), trivial=F.ledger.trivial, all_nonzero=False,
            configurations=[], spot_check=None, seconds=seconds, error=f"{type(exc).__name__}: {exc}",
        )
    seconds["run"] = time.perf_counter() - start
    identity, perm = _identity(F, run.result)
    recovered = [{"W": [[str(e) for e in row] for row in W.entries()], "v": [str(x) for x in v]}
                 for W, v in run.result]
    configurations = chain(run.configs + list(run.links.values()))
    t = time.perf_counter()
    factors, all_nonzero = exceptional_factors(F.ledger, len(F.e_names))
    seconds["factor"] = time.perf_counter() - t
    check = None
    if check_point:
        t = time.perf_counter()
        check = spot_check(F, factors, configurations, seed=seed, token_bound=token_bound, schedule=plan)
        seconds["spot_check"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - start
    seconds["cpu"] = time.process_time() - cpu_start
    return Certificate(
        d=d, heads=heads, seed=seed, token_bound=token_bound, schedule=plan,
        identity=identity, permutation=perm, recovered=recovered,
        queries=oracle.queries, max_length=oracle.max_length, learner_queries=run.queries,
        redraws=run.redraws, formula=formula, formula_max_length=max_query_length(heads),
        factors=factors, records=len(F.ledger), trivial=F.ledger.trivial, all_nonzero=all_nonzero,
        configurations=configurations, spot_check=check, seconds=seconds,
        links=len(run.links), dropped=len(run.history), fallback=run.fallback,
    )
