"""How models and results are shown: grids for ``str``, LaTeX for notebooks, code for reprs.

In the style of python-flint (``16/29``; an ``fmpq_mat`` printed as rows of
right-aligned columns) and sympy (``pprint``, LaTeX in notebooks). Every class
that mixes in :class:`Shown` prints its readable grid with ``str`` and in
IPython (``_repr_pretty_``), and its LaTeX (``\\begin{pmatrix}``, ``\\frac{p}{q}``)
in Jupyter (``_repr_latex_``). Reprs of models are code (:func:`code`: an integer
bare, any other rational as the text ``'p/q'`` that the constructors read).

>>> from flint import fmpq
>>> print("\\n".join(grid([[1, fmpq(1, 3)], [4, 5]])))
[1, 1/3]
[4,   5]
>>> code(fmpq(16, 29)), code(fmpq(3)), latex(fmpq(-1, 2))
("'16/29'", '3', '-\\\\frac{1}{2}')
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import Any

import mpmath
from flint import fmpq, fmpz

from .exact import rational_str
from .numberfield.element import NumberFieldElement

__all__ = ["Shown", "code", "code_matrix", "code_vector", "grid", "labelled", "latex", "pmatrix", "row",
           "summary", "text"]

#: significant digits of a real (mpmath) number in a grid or in LaTeX
DIGITS = 8


def text(e: Any) -> str:
    """One entry as text: ``p/q`` for a rational, the field's notation for an element, ``DIGITS``
    significant digits for an mpmath real."""
    if isinstance(e, fmpq):
        return rational_str(e)
    if isinstance(e, mpmath.mpf):
        return mpmath.nstr(e, DIGITS)
    return str(e)


def real(x: fmpq) -> mpmath.mpf:
    """A rational as an mpmath real (rounded at mpmath's precision), to be shown in decimal."""
    return mpmath.mpf(int(x.p)) / int(x.q)


def reals(rows: Sequence[Sequence[fmpq]]) -> list[list[mpmath.mpf]]:
    return [[real(x) for x in r] for r in rows]


def short(x: Any) -> str:
    """A rational or real number to 3 significant digits (``1e-30``), for summaries: display only."""
    return mpmath.nstr(real(x) if isinstance(x, fmpq) else x, 3)


def code(e: Any) -> str:
    """One entry as Python code that a model's constructor reads: ``3`` or ``'16/29'``, ``'1 + a'``."""
    if isinstance(e, (int, fmpz)) and not isinstance(e, bool):
        return str(e)
    if isinstance(e, fmpq) and e.q == 1:
        return str(e.p)
    if isinstance(e, NumberFieldElement) and e.is_rational():
        return code(e.rational())
    return repr(text(e))


def code_vector(v: Sequence[Any]) -> str:
    return "[" + ", ".join(code(e) for e in v) + "]"


def code_matrix(rows: Sequence[Sequence[Any]]) -> str:
    return "[" + ", ".join(code_vector(r) for r in rows) + "]"


def grid(rows: Sequence[Sequence[Any]]) -> list[str]:
    """A matrix as lines ``[a, b]``, each column right-aligned (python-flint's ``fmpq_mat``)."""
    cells = [[text(e) for e in r] for r in rows]
    widths = [max((len(r[c]) for r in cells if c < len(r)), default=0) for c in range(max(map(len, cells)))]
    return ["[" + ", ".join(s.rjust(w) for s, w in zip(r, widths)) + "]" for r in cells]


def row(v: Sequence[Any]) -> str:
    """A vector on one line: ``[1/2, -1, 3]``."""
    return "[" + ", ".join(text(e) for e in v) + "]"


def labelled(label: str, lines: Sequence[str]) -> list[str]:
    """``label`` before the first line, the others indented under it."""
    pad = " " * len(label)
    return [(label if i == 0 else pad) + line for i, line in enumerate(lines)]


def summary(name: str, head: str, details: Sequence[str]) -> str:
    """``<name head: detail, detail>``: a repr that reads as a summary, not as code."""
    return f"<{name} {head}" + (": " + ", ".join(details) if details else "") + ">"


def wrapped(line: str, width: int = 80) -> list[str]:
    """``line`` broken at spaces into lines of at most ``width`` columns, the later ones indented."""
    return textwrap.wrap(line, width, subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False) or [""]


def _latex_rational(q: fmpq) -> str:
    sign, mag = ("-", -q) if q < 0 else ("", q)
    return f"{sign}{mag.p}" if mag.q == 1 else f"{sign}\\frac{{{mag.p}}}{{{mag.q}}}"


def _latex_element(e: NumberFieldElement) -> str:
    terms = []
    for k, c in enumerate(e.poly.coeffs()):
        if c == 0:
            continue
        power = "" if k == 0 else (e.field.name if k == 1 else f"{e.field.name}^{{{k}}}")
        mag = -c if c < 0 else c
        body = _latex_rational(mag) if not power else power if mag == 1 else f"{_latex_rational(mag)} {power}"
        terms.append(("-" if c < 0 else "+", body))
    if not terms:
        return "0"
    first = ("-" if terms[0][0] == "-" else "") + terms[0][1]
    return first + "".join(f" {sign} {body}" for sign, body in terms[1:])


def latex(e: Any) -> str:
    """One entry in LaTeX: ``\\frac{p}{q}``, an element ``\\frac{3}{2} - \\frac{1}{5} a``, a real."""
    if isinstance(e, (int, fmpz)):
        return str(e)
    if isinstance(e, fmpq):
        return _latex_rational(e)
    if isinstance(e, NumberFieldElement):
        return _latex_element(e)
    return text(e)


def pmatrix(rows: Sequence[Sequence[Any]]) -> str:
    """``\\begin{pmatrix} ... \\end{pmatrix}`` (a vector: pass one row)."""
    body = r" \\ ".join(" & ".join(latex(e) for e in r) for r in rows)
    return rf"\begin{{pmatrix}} {body} \end{{pmatrix}}"


def latex_lines(lines: Sequence[str]) -> str:
    """Lines of LaTeX one under the other, for ``_repr_latex_``."""
    return r"\begin{array}{l} " + r" \\ ".join(lines) + r" \end{array}"


class Shown:
    """``str`` is the readable grid of :meth:`_lines`; IPython pretty-prints it and Jupyter shows
    :meth:`_latex_lines` (a class without LaTeX lines is shown as its text)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # IPython looks for _repr_pretty_ in each class's own __dict__ before that class's __repr__
        cls._repr_pretty_ = Shown._repr_pretty_  # type: ignore[method-assign]

    def _lines(self) -> list[str]:
        raise NotImplementedError

    def _latex_lines(self) -> list[str] | None:
        return None

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self) if cycle else str(self))

    def _repr_latex_(self) -> str | None:
        lines = self._latex_lines()
        return None if lines is None else "$\\displaystyle " + latex_lines(lines) + "$"


# -- models: heads (exp_W, v, exp_w) over Q or a number field -------------------------------
def plural(n: int, word: str) -> str:
    """``1 head``, ``2 heads``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def field_latex(field: Any) -> str:
    """``\\mathbb{Q}(a),\\ a^{2} - 2 = 0,\\ a \\approx 1.414214``."""
    poly = re.sub(r"\^(\d+)", r"^{\1}", field.polynomial_text()).replace("*", " ")
    return (rf"\mathbb{{Q}}({field.name}),\ {poly} = 0,\ "
            rf"{field.name} \approx {field.root.approximation(7)}")


def head_code(head: Any, *, field: bool = True) -> str:
    """``Head(exp_W=[[2, 1], [1, 3]], v=[1, -1])`` (with ``exp_w=``, and ``field=`` over a field)."""
    bias = "" if head.exp_w is None else f", exp_w={code_vector(head.exp_w)}"
    over = f", field={head.field!r}" if field and head.field is not None else ""
    return f"Head(exp_W={code_matrix(head.exp_W)}, v={code_vector(head.v)}{bias}{over})"


def model_code(model: Any) -> str:
    """The repr of a model: ``MultiHeadAttention([Head(...), ...])``; over a number field
    ``MultiHeadAttention.from_lists(exp_Ws, vs, field=...)``; without heads ``from_dict``."""
    name = type(model).__name__
    if not model.heads:
        return f"{name}.from_dict({model.to_dict()!r})"
    if model.field is not None:
        exp_Ws = "[" + ", ".join(code_matrix(h.exp_W) for h in model.heads) + "]"
        vs = "[" + ", ".join(code_vector(h.v) for h in model.heads) + "]"
        return f"{name}.from_lists({exp_Ws}, {vs}, field={model.field!r})"
    offset = "" if model.c0 == 0 else f", c0={code(model.c0)}"
    return f"{name}([" + ", ".join(head_code(h) for h in model.heads) + f"]{offset})"


def _is_vector(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def block(prefix: str, items: Sequence[tuple[str, Any]]) -> list[str]:
    """``prefix + name = value`` for each item, the ``=`` aligned: a matrix (a sequence of rows) as a
    grid, a vector on one line, anything else as its text; ``None`` values left out."""
    items = [(name, value) for name, value in items if value is not None]
    width = max(len(prefix + name) for name, _ in items)
    out: list[str] = []
    for name, value in items:
        label = f"{prefix + name:<{width}} = "
        if _is_vector(value) and value and _is_vector(value[0]):
            out += labelled(label, grid(value))
        elif _is_vector(value):
            out.append(label + row(value))
        else:
            out.append(label + text(value))
    return out


def head_lines(head: Any, prefix: str = "") -> list[str]:
    """``exp_W = [...]`` (a grid), ``v = [...]`` and ``exp_w = [...]``, each name after ``prefix``."""
    return block(prefix, [("exp_W", head.exp_W), ("v", head.v), ("exp_w", head.exp_w)])


def model_lines(model: Any) -> list[str]:
    """A model's ``str``: a header line, then each head's grids (``heads[i].exp_W = ...``)."""
    out = [f"{type(model).__name__}: d = {model.d}, {plural(len(model.heads), 'head')}"
           + ("" if model.field is None else f", over {model.field}")]
    for i, h in enumerate(model.heads):
        out += head_lines(h, f"heads[{i}].")
    if model.c0 != 0:
        out.append(f"c0 = {text(model.c0)}")
    return out


def head_latex(head: Any, index: int | None = None) -> str:
    """``e^{W_0} = \\begin{pmatrix}...\\end{pmatrix},\\ v_0 = ...`` (``index`` ``None``: no subscripts)."""
    sub = "" if index is None else f"_{{{index}}}"
    out = rf"e^{{W{sub}}} = {pmatrix(head.exp_W)},\quad v{sub} = {pmatrix([head.v])}"
    if head.exp_w is not None:
        out += rf",\quad e^{{w{sub}}} = {pmatrix([head.exp_w])}"
    return out


def model_latex(model: Any) -> list[str]:
    """The lines of a model's ``_repr_latex_``: a header, one line per head, ``c_0``."""
    over = "" if model.field is None else rf",\ \text{{over }} {field_latex(model.field)}"
    out = [rf"\text{{{type(model).__name__}: }} d = {model.d},\ H = {len(model.heads)}{over}"]
    out += [head_latex(h, i) for i, h in enumerate(model.heads)]
    if model.c0 != 0:
        out.append(f"c_0 = {latex(model.c0)}")
    return out
