"""The named states (exactlearn.states): readable values, pickling, and their use by the schedule."""

from __future__ import annotations

import json
import pickle

from exactlearn import MultiHeadAttention, Oracle, learn
from exactlearn.schedule import link_kind
from exactlearn.states import ConfigKind, LinkKind, Redraw, RedrawReason, Status, Why


def test_members_print_and_serialise_as_their_values():
    assert [str(k) for k in LinkKind] == ["x", "a", "a, x reflected"]
    assert json.dumps([ConfigKind.MATCHING, Status.USED]) == '["matching", "used"]'
    assert f"{Why.POLE_PRODUCT}" == "pole product"
    assert "predicted" not in {k.value for k in ConfigKind}


def test_a_redraw_entry_is_its_text_and_carries_its_reason():
    r = Redraw("configuration 3: the head matching by poles and residues is not unique",
               RedrawReason.AMBIGUOUS_PAIRING)
    assert r.startswith("configuration 3")
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.reason is RedrawReason.AMBIGUOUS_PAIRING
    assert json.loads(json.dumps([r])) == [str(r)]


def test_the_schedule_sets_enum_states():
    truth = MultiHeadAttention.from_lists([[[2, 4], [8, 2]], [[4, 2], [2, 16]]], [[1, 0], [0, 1]])
    rec = learn(Oracle(truth), 2, heads=2, seed=0)
    assert rec.redraws > 0
    assert all(isinstance(r, Redraw) and isinstance(r.reason, RedrawReason) for r in rec.redraw_reasons)
    for c in rec.configurations:
        assert isinstance(c.kind, ConfigKind) and c.status in (Status.MEASURED, Status.USED)
        assert (c.link is None) == (c.kind is ConfigKind.MEASUREMENT)
    assert all(isinstance(link_kind(j, 3), LinkKind) for j in range(1, 9))
