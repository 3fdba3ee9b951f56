"""Token slots of the chain of configurations (exactlearn.chain)."""

from __future__ import annotations

import random

from exactlearn.chain import TokenChain
from exactlearn.schedule import TokenSampler, link_kind, sub_tokens
from exactlearn.states import LinkKind, Status


def make(d=3, n_full=9, seed=0):
    chain = TokenChain(d, n_full, TokenSampler(d, 2, random.Random(seed)))
    chain.draw()
    return chain


def test_linked_configurations_share_x_or_a():
    chain = make()
    assert len(chain.configs) == 9 and chain.pre_query_ok()
    for j in range(1, 9):
        prev, cur = chain.configs[j - 1], chain.configs[j]
        if link_kind(j, 3) is LinkKind.X:
            assert prev.x == cur.x
        else:
            assert sub_tokens(prev.z, prev.x) == sub_tokens(cur.z, cur.x)


def test_a_redraw_renews_only_its_own_slots_and_drops_answered_users():
    chain = make()
    before = [(c.x, c.z) for c in chain.configs]
    for c in chain.configs:
        c.values, c.status = [1], Status.MEASURED
    chain.redraw(4)
    after = [(c.x, c.z) for c in chain.configs]
    changed = {j for j in range(9) if before[j] != after[j]}
    assert 4 in changed and changed <= {3, 4, 5}
    assert all(chain.configs[j].status is Status.PENDING for j in changed)
    assert [c.status for c in chain.history] == [Status.DEGENERATE] * len(chain.history) and chain.history
    assert chain.pre_query_ok()


def test_unchained_configurations_share_nothing():
    chain = make(d=3, n_full=3)
    assert chain.n_chained == 3
    xs = [c.x for c in chain.configs[3:]]
    assert len(chain.x.of) == 9 and len(set(chain.x.of[3:])) == 6 == len(xs)


def _design_of(chain):
    from exactlearn.schedule import integer_matrix, weight_row
    return integer_matrix([weight_row(c.x, c.z) for c in chain.configs])


def test_the_kept_weight_design_is_the_current_configurations_design():
    chain = make()
    assert chain.weight_design == _design_of(chain)
    for c in chain.configs:
        c.values, c.status = [1], Status.MEASURED
    chain.redraw(4)
    assert chain.weight_design == _design_of(chain)


def test_a_chooser_picks_every_new_and_redrawn_vector():
    asked = []

    def choose(chain, slots, slot, planning):
        asked.append((slots.kind, slot, planning))
        return chain.random_token()

    chain = TokenChain(2, 4, TokenSampler(2, 2, random.Random(0)), choose=choose)
    chain.draw()
    planned = [a for a in asked if a[2]]
    # configuration 0 creates an x and an a slot, every later one the vector it does not share
    assert len(planned) % 5 == 0 and {(k, s) for k, s, _ in planned[:5]} == {
        (LinkKind.X, 0), (LinkKind.A, 0), (LinkKind.A, 1), (LinkKind.X, 1), (LinkKind.A, 2)}
    asked.clear()
    for c in chain.configs:
        c.values, c.status = [1], Status.MEASURED
    chain.redraw(2)
    assert asked and all(not planning for _, _, planning in asked)


def test_plans_keep_the_cheapest_draw_with_its_own_design():
    costs = []

    def cost(pairs):
        costs.append(sum(abs(t) for x, z in pairs for t in x + z))
        return costs[-1]

    chain = TokenChain(2, 4, TokenSampler(2, 2, random.Random(3)), plans=6, plan_cost=cost)
    chain.draw()
    assert len(costs) == 6 and cost(chain.pairs()) == min(costs[:6])
    assert chain.weight_design == _design_of(chain)
