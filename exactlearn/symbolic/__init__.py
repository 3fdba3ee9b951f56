"""The generic certificate: the one schedule run over ``Q(E, V)``.

Every weight becomes an indeterminate: ``exp(W_h)[a][b] = E_h_a_b`` and
``v_h[a] = V_h_a``. The schedule of :mod:`exactlearn.learn` runs unchanged over
the field of rational functions in them (:class:`SymbolicField`, which
implements :class:`exactlearn.field.Field`), so one run covers every model
except those on an explicit algebraic exceptional set, the zero sets of the
polynomials the run divided by or relied on being nonzero (among them every
pairing candidate of a link of the chain that the run rejected;
docs/algorithm.md section 4, docs/generic-certificate.md).

* :mod:`.field` -- ``Q(E, V)``: reduced fractions of python-flint ``fmpq_mpoly``;
* :mod:`.ledger` -- what was relied on being nonzero, and why;
* :mod:`.ratfun` -- copy functions over ``Q(E, V)``: reconstruction, poles, residues;
* :mod:`.model` -- the indeterminate model and its logged oracle;
* :mod:`.certificate` -- :func:`certify`: identity, counts, exceptional set.

>>> cert = certify(1, 1)
>>> cert.passed, cert.recovered
(True, [{'W': [['log(E_0_0_0)']], 'v': ['V_0_0']}])
"""

from ..logspace import (
    LogMatrix as SymbolicLogMatrix,  # the one LogMatrix, over indeterminate names
)
from .certificate import Certificate, ExceptionalFactor, SpotCheck, certify, specialise
from .element import Element
from .field import SymbolicField
from .ledger import KINDS, Ledger, Record
from .model import SymbolicModel, SymbolicOracle

__all__ = [
    "certify",
    "specialise",
    "Certificate",
    "ExceptionalFactor",
    "SpotCheck",
    "SymbolicField",
    "Element",
    "SymbolicLogMatrix",
    "SymbolicModel",
    "SymbolicOracle",
    "Ledger",
    "Record",
    "KINDS",
]
