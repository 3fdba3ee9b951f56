"""exactlearn: learn multi-head softmax attention from black-box queries, exactly.

An exact-arithmetic verifier for "Provably Learning Multi-Head Attention with
Queries" (Sunyeop Kim, Insung Kim, Jian Guo; arXiv 2608.03294). Every oracle
output, interpolation and solve runs over the rationals with python-flint, so
exact recovery and the query counts ``4Hd^2 - 2H + 1`` (maximum length
``2H + 1``) are checked literally; models over a number field
(:class:`NumberField`) are learned exactly too. The query schedule is this project's own
construction meeting the counts stated in the paper's abstract.

>>> from exactlearn import MultiHeadAttention, Oracle, learn
>>> truth = MultiHeadAttention.random(d=2, heads=2, seed=1)
>>> oracle = Oracle(truth)
>>> rec = learn(oracle, d=2, heads=2)
>>> rec.model == truth.canonical()
True
>>> (oracle.queries, rec.formula, oracle.max_length, rec.redraws)
(29, 29, 5, 0)
"""

from .errors import (
    ExactLearnError,
    InconsistentAnswersError,
    InvalidArgumentError,
    InvalidModelError,
    InvalidQueryError,
    NotRationalError,
    NumberFieldError,
    OracleError,
    OracleOutputError,
    QueryBudgetExceeded,
    ReconstructionError,
    RecoveryError,
    RedrawBudgetExceeded,
    SweepError,
    VerificationError,
)
from .learn import DEFAULT_TOKEN_BOUND, learn
from .limits import DEFAULT_LIMITS, MAX_OUTPUT_BITS, Limits
from .logspace import LogMatrix, LogNumber
from .model import Head, MultiHeadAttention
from .numberfield import NumberField, NumberFieldElement
from .oracle import Oracle
from .recovery import RecoveredHead, Recovery
from .schedule import (
    lean_query_count,
    max_query_length,
    paper_query_count,
    parameter_floor,
    predecessor_query_count,
)

__version__ = "0.1.0"

PAPER = {
    "title": "Provably Learning Multi-Head Attention with Queries",
    "authors": ["Sunyeop Kim", "Insung Kim", "Jian Guo"],
    "arxiv": "2608.03294",
    "url": "https://arxiv.org/abs/2608.03294",
}

__all__ = [
    "MultiHeadAttention",
    "Head",
    "NumberField",
    "NumberFieldElement",
    "Oracle",
    "learn",
    "Recovery",
    "RecoveredHead",
    "LogMatrix",
    "LogNumber",
    "paper_query_count",
    "lean_query_count",
    "max_query_length",
    "predecessor_query_count",
    "parameter_floor",
    "DEFAULT_TOKEN_BOUND",
    "Limits",
    "DEFAULT_LIMITS",
    "MAX_OUTPUT_BITS",
    "PAPER",
    "ExactLearnError",
    "InvalidArgumentError",
    "InvalidModelError",
    "InvalidQueryError",
    "OracleOutputError",
    "OracleError",
    "QueryBudgetExceeded",
    "NotRationalError",
    "NumberFieldError",
    "ReconstructionError",
    "RecoveryError",
    "RedrawBudgetExceeded",
    "InconsistentAnswersError",
    "VerificationError",
    "SweepError",
    "__version__",
]
