r"""Interactive mechanisms, their sequential and concurrent composition, and their exact privacy.

An interactive mechanism holds a private input and answers a stream of adaptively chosen queries; its answer
may depend on everything it was asked before.  On two neighbouring inputs it gives a pair of *systems*
:math:`(\mathcal M^0, \mathcal M^1)`.  An *adversary* – a possibly randomised policy – chooses each query from
the transcript so far, and may talk to several mechanisms at once, interleaving its queries (concurrent
composition).  This package makes all of it exact for finite query and answer sets:

* :mod:`~dp_course.interactive.systems` – mechanisms (:class:`HiddenStateMechanism`,
  :class:`FunctionMechanism`, :class:`TableMechanism`) and compositions (:func:`concurrent`,
  :func:`sequential`);
* :mod:`~dp_course.interactive.adversaries` – :class:`Adversary` (a policy on transcripts);
* :mod:`~dp_course.interactive.transcripts` – :func:`transcript_distribution`: every transcript with its
  probability under both inputs, and the hockey-stick / Rényi divergences and PLD of the interaction;
* :mod:`~dp_course.interactive.optimal` – the worst adversary by dynamic programming over the mechanisms' own
  histories: :func:`worst_case_delta`, :func:`worst_case_renyi`, :func:`worst_case_epsilon`,
  :func:`best_adversary`;
* :mod:`~dp_course.interactive.decomposition` – the four-system decomposition of Theorem 3 (:func:`decompose`);
* :mod:`~dp_course.interactive.examples` – randomized response with fresh or reused coins, the sparse vector
  technique with a single noisy threshold, the Laplace counter and private Guess-and-Check (Appendix B).

Conventions: queries and answers are integer indices (labels for display); input ``b = 0`` gives the law
``P``, ``b = 1`` the law ``Q``; ``direction="forward"`` is :math:`P \| Q`, ``"backward"`` :math:`Q \| P`,
``"both"`` the larger.

>>> from dp_course.interactive import concurrent, worst_case_delta
>>> from dp_course.interactive.examples import randomized_response_system
>>> rr = randomized_response_system(1.0, rounds=2)
>>> round(worst_case_delta(concurrent(rr, rr), 1.0), 12)   # four randomized responses at eps = 1
0.53304357291

References:
    X. Lyu, "Composition theorems for interactive differential privacy", NeurIPS 2022, arXiv:2207.09397.
    S. Vadhan and T. Wang, "Concurrent composition of differential privacy", TCC 2021, arXiv:2105.14427.
    S. Vadhan and W. Zhang, "Concurrent composition theorems for differential privacy", 2022,
    arXiv:2207.08335 (the f-DP version, which implies the approximate-DP result).
"""

from . import examples
from .adversaries import Action, Adversary, Transcript, check_transcript, fixed_adversary, state_of
from .decomposition import Decomposition, decompose, rr_weights
from .optimal import MAX_STATES, best_adversary, worst_case_delta, worst_case_epsilon, worst_case_renyi
from .systems import (
    Composition,
    FunctionMechanism,
    HiddenStateMechanism,
    History,
    InteractiveMechanism,
    TableMechanism,
    answer_table,
    as_composition,
    concurrent,
    sequential,
)
from .transcripts import TranscriptDistribution, describe_transcript, transcript_distribution

__all__ = [
    "examples",
    "Action",
    "Adversary",
    "Transcript",
    "fixed_adversary",
    "state_of",
    "check_transcript",
    "Decomposition",
    "decompose",
    "rr_weights",
    "MAX_STATES",
    "best_adversary",
    "worst_case_delta",
    "worst_case_epsilon",
    "worst_case_renyi",
    "Composition",
    "FunctionMechanism",
    "HiddenStateMechanism",
    "History",
    "InteractiveMechanism",
    "TableMechanism",
    "answer_table",
    "as_composition",
    "concurrent",
    "sequential",
    "TranscriptDistribution",
    "describe_transcript",
    "transcript_distribution",
]
