"""Read the configurations a learner ran from an oracle's log.

The schedule's queries are ``S_k(x, z) = (z, ..., z [k copies], x)``: a
configuration's queries share ``x`` (the last token) and ``z`` (the repeated
one), with ``k`` counting up. A *measurement* configuration starts at ``k = 0``
(the one-token query ``(x)``); a *matching* configuration starts at ``k = 1``.
This module groups a log into configurations using nothing but the tokens.

>>> log = [((1, 0),), ((0, 1), (1, 0)), ((0, 1), (0, 1), (1, 0)), ((2, 1), (1, 0))]
>>> [(g.kind, g.x, g.z, g.ks) for g in groups(log)]
[('measurement', (1, 0), (0, 1), [0, 1, 2]), ('matching', (1, 0), (2, 1), [1])]
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Group", "groups", "parse_query"]


@dataclass
class Group:
    """The consecutive queries of one configuration ``(x, z)`` with copy numbers ``ks``."""

    kind: str  # "measurement" (starts at k = 0) or "matching" (starts at k = 1)
    x: tuple
    z: tuple | None
    ks: list[int] = field(default_factory=list)

    @property
    def a(self) -> tuple | None:
        """``a = z - x``, the vector the chain may share instead of ``x``."""
        return None if self.z is None else tuple(p - q for p, q in zip(self.z, self.x))


def parse_query(query: tuple) -> tuple[tuple, tuple | None, int] | None:
    """``(x, z, k)`` of a copy query ``(z, ..., z, x)``; ``None`` if the query has another shape."""
    x, head = query[-1], query[:-1]
    if not head:
        return x, None, 0
    if any(t != head[0] for t in head):
        return None
    return x, head[0], len(head)


def groups(queries: list[tuple]) -> list[Group]:
    """The log as configurations; a query of another shape ends the parse with a ValueError."""
    out: list[Group] = []
    for i, query in enumerate(queries):
        parsed = parse_query(query)
        if parsed is None:
            raise ValueError(f"query {i + 1} is not of the form (z, ..., z, x): {query}")
        x, z, k = parsed
        last = out[-1] if out else None
        continues = (last is not None and last.x == x and k == last.ks[-1] + 1
                     and (last.z is None or last.z == z))
        if continues:
            last.z = z
            last.ks.append(k)
        else:
            out.append(Group("measurement" if k == 0 else "matching", x, z, [k]))
    return out
