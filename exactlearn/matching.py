"""Pairing the heads of two linked configurations (docs/algorithm.md section 4).

A link between configurations ``j - 1`` and ``j`` has a matching configuration
``C`` whose every term is ``(rho_{j-1,h} rho_{j,h'}, c-combination)``. The heads
are paired by a *perfect matching*: a bijection ``i -> sigma[i]`` from the terms
of ``j - 1`` to those of ``j`` with, for every ``i``, a distinct term ``tau[i]`` of
``C`` that fits. :func:`perfect_matchings` enumerates them (the learner requires
exactly one); :func:`link_edges` lists which triples fit, through the field's
comparisons, so the same search serves exact, ball and symbolic numbers.

>>> perfect_matchings([[(0, 0), (1, 1)], [(1, 1)]])
[([0, 1], [0, 1])]
>>> perfect_matchings([[(1, 0)], [(0, 1)]])
[([1, 0], [0, 1])]
>>> perfect_matchings([[(0, 0), (1, 1)], [(0, 0), (1, 1)]], limit=5)
[([0, 1], [0, 1]), ([1, 0], [1, 0])]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .errors import ReconstructionError
from .field import Field
from .states import LinkKind, Why

__all__ = ["Edges", "perfect_matchings", "link_edges", "link_matchings", "residue_labels"]

#: ``edges[i]`` lists the pairs ``(i2, t)`` allowed for term ``i``.
Edges = Sequence[Sequence[tuple[int, int]]]


def perfect_matchings(edges: Edges, limit: int = 2) -> list[tuple[list[int], list[int]]]:
    """At most ``limit`` pairings ``(sigma, tau)`` using only ``edges``, in backtracking order.

    ``sigma`` and ``tau`` are injective: ``sigma[i]`` and ``tau[i]`` come from one
    pair ``(sigma[i], tau[i])`` of ``edges[i]``.
    """
    n = len(edges)
    found: list[tuple[list[int], list[int]]] = []
    sigma: list[int] = []
    tau: list[int] = []

    def extend(i: int) -> None:
        if len(found) >= limit:
            return
        if i == n:
            found.append((list(sigma), list(tau)))
            return
        for i2, t in edges[i]:
            if i2 in sigma or t in tau:
                continue
            sigma.append(i2)
            tau.append(t)
            extend(i + 1)
            sigma.pop()
            tau.pop()

    extend(0)
    return found


def link_edges(field: Field, kind: LinkKind | str, prev: Sequence, cur: Sequence,
               target: Sequence) -> list | None:
    """The pairs ``(i2, t)`` that fit each term ``i`` of ``prev``; ``None`` if the term counts differ.

    Term ``i`` of ``prev`` and ``i2`` of ``cur`` fit term ``t`` of ``target`` when
    ``rho_t = rho_i rho_i2`` and ``c_t = c_i + c_i2`` (shared ``x``) or
    ``c_t = c_i = c_i2`` (shared ``a``), or ``rho_t = rho_i^2 / rho_i2`` and
    ``c_t = c_i = c_i2`` (shared ``a``, ``x`` reflected: affine attention),
    compared with ``field.equal``.
    """
    kind = LinkKind(kind)
    n = len(prev)
    if len(cur) != n or len(target) != n:
        return None
    edges: list[list[tuple[int, int]]] = []
    for rp, cp in prev:
        row: list[tuple[int, int]] = []
        for i2, (rc, cc) in enumerate(cur):
            if kind is LinkKind.X:
                c = cp + cc
            elif field.equal(cp, cc, Why.RESIDUE_COMBINATION):
                c = cp
            else:
                continue
            rho = rp * rp / rc if kind is LinkKind.REFLECT else rp * rc
            row.extend((i2, t) for t, (rt, ct) in enumerate(target)
                       if field.equal(rho, rt, Why.POLE_PRODUCT)
                       and field.equal(c, ct, Why.RESIDUE_COMBINATION))
        edges.append(row)
    return edges


def link_matchings(field: Field, kind: LinkKind | str, prev: Sequence, cur: Sequence, target: Sequence,
                   limit: int = 2) -> list[tuple[list[int], list[int]]]:
    """The pairings of a link: :func:`perfect_matchings` over :func:`link_edges`."""
    edges = link_edges(field, kind, prev, cur, target)
    return [] if edges is None else perfect_matchings(edges, limit)


def residue_labels(field: Field, residues: Sequence, predicted: Sequence) -> list[int] | None:
    """Label heads by their residues (docs/algorithm.md section 10): ``labels[h]`` is the index of the one
    residue equal to head ``h``'s ``predicted`` one, each residue one head's; ``None`` when that is not
    unique. Raises :class:`~exactlearn.ReconstructionError` when a prediction meets no residue (the
    answers contradict the learned values).

    Decided on the field's labelling elements (:meth:`~exactlearn.field.Field.for_labels`; balls scaled
    to the answers' observed error) when they give unique labels, else on the elements themselves
    (on exact fields, whose labelling elements are themselves, once).

    >>> from exactlearn.exactfield import ExactRationals
    >>> F = ExactRationals()
    >>> residue_labels(F, [3, 5], [5, 3]), residue_labels(F, [], [])
    ([1, 0], [])
    """
    def hits(ball: Callable[[Any], Any]) -> list[list[int]]:
        return [[i for i, c in enumerate(residues) if field.equal(ball(c), ball(p), Why.RESIDUE_COMBINATION)]
                for p in predicted]

    plain = hits(lambda x: x)
    if not all(plain):
        raise ReconstructionError("a predicted residue v_h^T (x - z) is none of the residues found")
    scaled = type(field).for_labels is not Field.for_labels  # (the same elements: no second pass)
    for found in ([hits(field.for_labels)] if scaled else []) + [plain]:
        labels = [h[0] for h in found]
        if all(len(h) == 1 for h in found) and len(set(labels)) == len(labels):
            return labels
    return None
