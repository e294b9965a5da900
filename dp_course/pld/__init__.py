r"""Privacy loss distributions (PLDs).

For an ordered pair of distributions :math:`(P, Q)` – the outputs of a mechanism on two neighbouring inputs –
the *privacy loss* of an output :math:`y` is the log-likelihood ratio

.. math:: \ell(y) = \ln \frac{P(y)}{Q(y)},

and the privacy loss *distribution* is the law of :math:`L = \ell(Y)` for :math:`Y \sim P`.  Outputs that
``Q`` never produces have :math:`\ell = +\infty`; their probability is kept as :attr:`infinity_mass`.

Everything about :math:`(\epsilon, \delta)` can be read off the PLD.  The tight :math:`\delta` for a given
:math:`\epsilon` is the hockey-stick divergence

.. math:: \delta(\epsilon) = \mathbb{E}\left[(1 - e^{\epsilon - L})_+\right]
          = P(L = \infty) + \sum_{l > \epsilon} P(L = l)\,(1 - e^{\epsilon - l}),

(Sommer, Meiser & Mohammadi 2019, "Privacy loss classes", PoPETs, Thm. 1; Koskela et al. 2020,
arXiv:1906.03049), and the PLD of an adaptive composition is the convolution of the PLDs (the privacy loss
of a transcript is the sum of the per-step losses).

Classes
-------
* :class:`PrivacyLossDistribution` – the interface (``cdf``, ``sample``, ``delta_for_epsilon``,
  ``epsilon_for_delta``, ``compose``, ``self_compose``, ``to_grid``), in :mod:`dp_course.pld.base`.
* :class:`AtomicPLD` – the shared math of PLDs with finitely many atoms (:mod:`dp_course.pld.atomic`).
* :class:`DiscretePLD` – exact, finite support (plus an atom at :math:`+\infty`).  The k-fold composition of a
  two-point PLD is done through the binomial law in log-space, O(k) (:mod:`dp_course.pld.discrete`).
* :class:`GaussianPLD` – :math:`L \sim N(\mu, 2\mu)`, closed form (:mod:`dp_course.pld.gaussian`).
* :class:`GridPLD` – losses on a uniform grid, composed by FFT; a pessimistic (upper bound on every
  :math:`\delta(\epsilon)`) or optimistic (lower bound) discretisation of any pair of densities with a
  monotone privacy loss, or of any other PLD (:mod:`dp_course.pld.grid`; the steps of discretising densities
  in :mod:`dp_course.pld.densities`, FFT and truncation helpers in :mod:`dp_course.pld.convolution`).

Modules build on each other in one direction: ``base`` <- ``atomic`` <- ``grid`` <- ``discrete``,
``gaussian`` (an exact PLD can put itself on a grid; the grid never needs to know the exact classes).
"""

from .atomic import AtomicPLD
from .base import PrivacyLossDistribution
from .discrete import DiscretePLD
from .gaussian import GaussianPLD
from .grid import GridPLD

__all__ = ["PrivacyLossDistribution", "AtomicPLD", "DiscretePLD", "GaussianPLD", "GridPLD"]

# Old private name of AtomicPLD, still imported by dp_course.plotting until it switches to the public one.
_AtomicPLD = AtomicPLD
