"""dp_course: the helper library of the course kit on how privacy loss accumulates.

Modules, one idea each:

* :mod:`dp_course.mechanisms` – randomized response, Laplace, Gaussian, name-and-shame
* :mod:`dp_course.pld` – privacy loss distributions (exact, Gaussian, discretised) and their composition (a package)
* :mod:`dp_course.divergences` – hockey-stick, privacy profile, KL, total variation, Rényi
* :mod:`dp_course.leaky` – leaky randomized response, the hardest (ε, δ)-indistinguishable pair
* :mod:`dp_course.simulation` – the simulation map: every (ε, δ)-indistinguishable pair is post-processed leaky RR
* :mod:`dp_course.composition` – basic, strong, optimal and heterogeneous composition
* :mod:`dp_course.adaptive` – transcripts of adaptive compositions; composing per-round simulation maps
* :mod:`dp_course.calibration` – per-step budgets and noise scales for a target guarantee
* :mod:`dp_course.renyi` – Rényi DP curves of the mechanisms
* :mod:`dp_course.rdp_accounting` – composing RDP curves and converting them to (ε, δ); the ``RDPCurve`` accountant
* :mod:`dp_course.zcdp` – zero-concentrated DP
* :mod:`dp_course.subsampling` – amplification by subsampling
* :mod:`dp_course.dpsgd` – the DP-SGD accountant
* :mod:`dp_course.pld_calibration` – exact (PLD) DP-SGD calibration: dp-accounting, or its table where it is missing
* :mod:`dp_course.datasets` – small real data sets bundled in installed packages (offline)
* :mod:`dp_course.training` – logistic regression, gradient descent and noisy clipped SGD
* :mod:`dp_course.interactive` – interactive mechanisms, concurrent composition, exact worst-case adversaries
* :mod:`dp_course.plotting`, :mod:`dp_course.widgets` – plots and interactive explorers for the lectures

A mechanism is named one way, by its frozen description in :mod:`dp_course.mechanisms`; the PLD, RDP, zCDP and
DP-SGD functions all accept it.  "ERRATA item N" in a docstring is item N of ``docs/errata.md`` (errors in the
course's source documents and their corrections).
"""

__version__ = "0.1.0"
