"""Every public callable of ``dp_course`` with one valid call, for the bad-input fuzz (tests/test_fuzz_public_api.py).

A :class:`Call` names its *target* (the public function, class or method, as found in a module's ``__all__``)
and gives a callable plus valid keyword arguments.  The fuzz replaces one argument at a time by a bad value and
checks the answer; :func:`public_targets` lists what must be covered, so a new public name without a
:class:`Call` here fails the suite.

Keep the valid arguments small: each call runs once per bad-input class and argument.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import numpy as np
from scipy import stats

import dp_course
from dp_course import (adaptive, calibration, composition, datasets, divergences, dpsgd, leaky, mechanisms,
                       notebook, pld_calibration, plotting, rdp_accounting, renyi, simulation, style, subsampling,
                       testing, training, widgets, zcdp)
from dp_course import interactive as ia
from dp_course.interactive import examples as ex
from dp_course.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse
from dp_course.pld import AtomicPLD, DiscretePLD, GaussianPLD, GridPLD, PrivacyLossDistribution
from dp_course.pld import atomic, convolution, densities
from dp_course.rdp_accounting import RDPCurve

__all__ = ["Call", "CALLS", "public_targets", "target_name"]


def _fonts_in_context() -> None:
    """``use_course_fonts`` without leaving its sizes to the rest of the test process."""
    with matplotlib.rc_context():
        style.use_course_fonts()


def _count_lines(func: Callable[..., Any]) -> tuple[Any, int]:
    """``count_python_lines`` on a fixed argument: the fuzz replaces the function."""
    return testing.count_python_lines(func, [3.0, 1.0])


def _library_calls(func: Callable[..., Any]) -> tuple[Any, frozenset[str]]:
    """``library_calls`` on a fixed argument: the fuzz replaces the function."""
    return testing.library_calls(func, [3.0, 1.0])


@dataclass(frozen=True)
class Call:
    """One valid call of a public target.

    Attributes:
        target: the public function, class or method this call exercises.
        call: what is called with ``kwargs`` (the target itself, a bound method, or a small wrapper).
        kwargs: valid arguments; the fuzz replaces each in turn.
        label: tells apart two calls of one target (e.g. a method on two kinds of PLD).
        aliases: other names a message may use for a parameter (``{"rho1": ("rhos",)}`` for ``*rhos``).
        log_result: the result is a logarithm, so ``-inf`` (log 0) is a valid value.
    """

    target: Any
    call: Callable[..., Any]
    kwargs: dict[str, Any]
    label: str = ""
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    log_result: bool = False

    @property
    def key(self) -> str:
        return target_name(self.target) + (f"[{self.label}]" if self.label else "")


def target_name(obj: Any) -> str:
    """``module.qualname`` of a function, class or method (a classmethod's function, not the bound method)."""
    obj = getattr(obj, "__func__", obj)
    return f"{obj.__module__}.{obj.__qualname__}"


def _public_modules() -> list[types.ModuleType]:
    names = ["dp_course"] + [m.name for m in pkgutil.walk_packages(dp_course.__path__, "dp_course.")
                             if not any(part.startswith("_") for part in m.name.split(".")[1:])]
    return [importlib.import_module(n) for n in names]


def public_targets() -> set[str]:
    """Every public function, concrete class constructor and public method named by a module's ``__all__``."""
    found: set[str] = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isclass(obj) and not isinstance(obj, types.GenericAlias):
                if not inspect.isabstract(obj) and obj.__module__.startswith("dp_course"):
                    found.add(target_name(obj))
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if getattr(value, "__isabstractmethod__", False):
                        continue  # each concrete class implements it: their methods are the targets
                    if isinstance(value, (classmethod, staticmethod)) or inspect.isfunction(value):
                        found.add(target_name(value))
            elif inspect.isfunction(obj):
                found.add(target_name(obj))
    return found


def _bad_round_pair(history: tuple[int, ...]) -> Any:
    return "x"


def _rr_round(history: tuple[int, ...]) -> tuple[list[float], list[float]]:
    return [0.75, 0.25], [0.25, 0.75]


def _respond(b: int, history: Any, x: int) -> list[float]:
    return [0.75, 0.25] if b == 0 else [0.25, 0.75]


def _policy(transcript: Any) -> Any:
    return None if transcript else 0


# Small valid objects the calls share.
RR = RandomizedResponse(1.0)
RR_PLD = RR.privacy_loss_distribution()
GAUSS_PLD = GaussianPLD(0.5)
GRID_PLD = RR_PLD.to_grid(0.05)
RR_SYS = ex.randomized_response_system(1.0, 1)
RR_SYS2 = ex.randomized_response_system(1.0, 2)
P3, Q3 = np.array([0.5, 0.3, 0.2]), np.array([0.25, 0.35, 0.4])
P2, Q2 = np.array([0.75, 0.25]), np.array([0.25, 0.75])
CURVE = RDPCurve.gaussian(2.0, orders=[2.0, 4.0, 8.0])
ORDERS = np.array([2.0, 4.0, 8.0])
X = np.array([[1.0, 0.5], [-1.0, 0.2], [0.5, -0.3], [-0.2, -1.0]])
Y = np.array([1, 0, 1, 0])
THETA = np.array([0.1, -0.2])
SIM_MAP = simulation.simulation_map(P2, Q2, math.log(3), 0.0)
TRANSCRIPTS = ia.transcript_distribution(ia.fixed_adversary([0]), RR_SYS)
DECOMPOSITION = ia.decompose(RR_SYS, 1.0, 0.0)
PROFILE = densities.probe_loss(stats.laplace(0, 1), stats.laplace(1, 1), 1e-15)
SPLIT = datasets.breast_cancer()

CALLS: list[Call] = [
    # ---- pld ------------------------------------------------------------------------------------------------
    Call(DiscretePLD, DiscretePLD, dict(losses=[-1.0, 1.0], probs=[0.25, 0.75], infinity_mass=0.0)),
    Call(DiscretePLD.from_pmfs, DiscretePLD.from_pmfs, dict(p=P3, q=Q3)),
    Call(DiscretePLD.to_grid, RR_PLD.to_grid, dict(value_step=0.01, pessimistic=True, tail_mass=1e-15)),
    Call(GaussianPLD, GaussianPLD, dict(mu=0.5)),
    Call(GaussianPLD.from_mechanism, GaussianPLD.from_mechanism, dict(sigma=1.0, sensitivity=1.0)),
    Call(GaussianPLD.pdf, GAUSS_PLD.pdf, dict(x=[0.0, 1.0])),
    Call(GaussianPLD.to_grid, GAUSS_PLD.to_grid, dict(value_step=0.01, pessimistic=True, tail_mass=1e-15)),
    Call(GridPLD, GridPLD, dict(start=-2, probs=[0.25, 0.25, 0.5], value_step=0.1, infinity_mass=0.0,
                                pessimistic=True, tail_mass=1e-15)),
    Call(GridPLD.to_grid, GRID_PLD.to_grid, dict(value_step=0.02, pessimistic=True, tail_mass=1e-15)),
    Call(GridPLD.from_pld, GridPLD.from_pld, dict(pld=GAUSS_PLD, value_step=0.01, pessimistic=False,
                                                  tail_mass=1e-15)),
    Call(GridPLD.from_densities, GridPLD.from_densities,
         dict(p_dist=stats.laplace(0, 1), q_dist=stats.laplace(1, 1), value_step=0.01, pessimistic=True,
              tail_mass=1e-15, loss_bounds=(-1.0, 1.0))),
    *[Call(getattr(PrivacyLossDistribution, method), getattr(pld, method), kwargs, label=kind)
      for kind, pld in (("discrete", RR_PLD), ("gaussian", GAUSS_PLD), ("grid", GRID_PLD))
      for method, kwargs in (("cdf", dict(x=[0.0, 0.5])), ("sample", dict(n=5, rng=np.random.default_rng(0))),
                             ("delta_for_epsilon", dict(epsilon=[0.0, 1.0])),
                             ("epsilon_for_delta", dict(delta=[1e-3, 0.1])),
                             ("compose", dict(other=pld)), ("self_compose", dict(k=3)))],
    Call(atomic.merge_atoms, atomic.merge_atoms, dict(losses=np.array([0.0, 0.0, 1.0]),
                                                      log_probs=np.log([0.25, 0.25, 0.5]))),
    Call(convolution.fft_size, convolution.fft_size, dict(n=100)),
    Call(convolution.chernoff_window, convolution.chernoff_window,
         dict(probs=np.array([0.25, 0.5, 0.25]), k=10, tail_mass=1e-10)),
    Call(convolution.truncate_tails, convolution.truncate_tails,
         dict(probs=np.array([1e-20, 0.5, 0.5, 1e-20]), tail_mass=1e-15, pessimistic=True)),
    Call(densities.LossProfile, densities.LossProfile,
         dict(p_dist=PROFILE.p_dist, q_dist=PROFILE.q_dist, y_lo=PROFILE.y_lo, y_hi=PROFILE.y_hi,
              probe=PROFILE.probe, values=PROFILE.values, decreasing=PROFILE.decreasing)),
    Call(densities.LossProfile.loss, PROFILE.loss, dict(y=np.array([0.0, 0.5]))),
    Call(densities.check_frozen_continuous, densities.check_frozen_continuous,
         dict(name="p_dist", dist=stats.norm(0, 1)), aliases={"dist": ("p_dist",)}),  # named as the caller says
    Call(densities.probe_loss, densities.probe_loss,
         dict(p_dist=stats.laplace(0, 1), q_dist=stats.laplace(1, 1), tail_mass=1e-15)),
    Call(densities.rounding_tolerance, densities.rounding_tolerance, dict(profile=PROFILE, value_step=0.01)),
    Call(densities.loss_range, densities.loss_range, dict(profile=PROFILE, loss_bounds=(-1.0, 1.0))),
    Call(densities.level_set_boundaries, densities.level_set_boundaries,
         dict(profile=PROFILE, grid=np.array([-0.5, 0.0, 0.5]), shift=0.0)),
    Call(densities.bucket_masses, densities.bucket_masses,
         dict(dist=stats.laplace(0, 1), t=np.array([0.2, 0.4, 0.6]), profile=PROFILE)),
    # ---- mechanisms -----------------------------------------------------------------------------------------
    Call(RandomizedResponse, RandomizedResponse, dict(epsilon=1.0)),
    Call(RandomizedResponse.sample, RR.sample, dict(x=[0, 1, 1], rng=np.random.default_rng(0))),
    Call(RandomizedResponse.output_distributions, RR.output_distributions, {}),
    Call(RandomizedResponse.privacy_loss_distribution, RR.privacy_loss_distribution, {}),
    Call(mechanisms.KaryRandomizedResponse, mechanisms.KaryRandomizedResponse, dict(epsilon=1.0, k=3)),
    Call(mechanisms.KaryRandomizedResponse.channel, mechanisms.KaryRandomizedResponse(1.0, 3).channel, {}),
    Call(mechanisms.KaryRandomizedResponse.sample, mechanisms.KaryRandomizedResponse(1.0, 3).sample,
         dict(x=[0, 2], rng=np.random.default_rng(0))),
    Call(mechanisms.KaryRandomizedResponse.output_distributions,
         mechanisms.KaryRandomizedResponse(1.0, 3).output_distributions, {}),
    Call(mechanisms.KaryRandomizedResponse.privacy_loss_distribution,
         mechanisms.KaryRandomizedResponse(1.0, 3).privacy_loss_distribution, {}),
    Call(LaplaceMechanism, LaplaceMechanism, dict(scale=1.0, sensitivity=1.0)),
    Call(LaplaceMechanism.from_epsilon, LaplaceMechanism.from_epsilon, dict(epsilon=1.0, sensitivity=1.0)),
    Call(LaplaceMechanism.sample, LaplaceMechanism(1.0).sample, dict(value=[0.0, 1.0], rng=np.random.default_rng(0))),
    Call(LaplaceMechanism.output_distributions, LaplaceMechanism(1.0).output_distributions, {}),
    Call(LaplaceMechanism.privacy_loss_distribution, LaplaceMechanism(1.0).privacy_loss_distribution,
         dict(value_step=0.01, pessimistic=True)),
    Call(GaussianMechanism, GaussianMechanism, dict(sigma=1.0, sensitivity=1.0)),
    Call(GaussianMechanism.sample, GaussianMechanism(1.0).sample, dict(value=[0.0, 1.0], rng=np.random.default_rng(0))),
    Call(GaussianMechanism.output_distributions, GaussianMechanism(1.0).output_distributions, {}),
    Call(GaussianMechanism.privacy_loss_distribution, GaussianMechanism(1.0).privacy_loss_distribution, {}),
    Call(mechanisms.NameAndShame, mechanisms.NameAndShame, dict(delta=0.01)),
    Call(mechanisms.NameAndShame.sample, mechanisms.NameAndShame(0.01).sample,
         dict(records=["a", "b"], rng=np.random.default_rng(0))),
    Call(mechanisms.NameAndShame.output_distributions, mechanisms.NameAndShame(0.01).output_distributions, {}),
    Call(mechanisms.NameAndShame.privacy_loss_distribution,
         mechanisms.NameAndShame(0.01).privacy_loss_distribution, {}),
    Call(mechanisms.noise_multiplier, mechanisms.noise_multiplier, dict(sigma=1.0, name="sigma")),
    Call(mechanisms.mechanism_argument, mechanisms.mechanism_argument,
         dict(value=GaussianMechanism(1.0), kind=GaussianMechanism, name="sigma", extra={})),
    # ---- divergences, leaky, simulation, adaptive -------------------------------------------------------------
    Call(divergences.hockey_stick_divergence, divergences.hockey_stick_divergence, dict(p=P3, q=Q3, epsilon=0.5)),
    Call(divergences.privacy_profile, divergences.privacy_profile, dict(p=P3, q=Q3, epsilon=[0.0, 0.5],
                                                                        symmetric=True)),
    Call(divergences.is_indistinguishable, divergences.is_indistinguishable,
         dict(p=P3, q=Q3, epsilon=1.0, delta=0.1, atol=1e-12)),
    Call(divergences.total_variation, divergences.total_variation, dict(p=P3, q=Q3)),
    Call(divergences.kl_divergence, divergences.kl_divergence, dict(p=P3, q=Q3)),
    Call(divergences.renyi_divergence, divergences.renyi_divergence, dict(p=P3, q=Q3, alpha=2.0)),
    Call(leaky.leaky_randomized_response, leaky.leaky_randomized_response, dict(epsilon=1.0, delta=0.1)),
    Call(leaky.sample_leaky_randomized_response, leaky.sample_leaky_randomized_response,
         dict(epsilon=1.0, delta=0.1, size=5, rng=np.random.default_rng(0), variable="U")),
    Call(leaky.leaky_outcome_indices, leaky.leaky_outcome_indices, dict(z=[0, 3, 1])),
    Call(simulation.simulation_map, simulation.simulation_map,
         dict(p=P2, q=Q2, epsilon=math.log(3), delta=0.0, method="explicit")),
    Call(simulation.simulation_map_error, simulation.simulation_map_error,
         dict(F=SIM_MAP, p=P2, q=Q2, epsilon=math.log(3), delta=0.0)),
    Call(simulation.apply_simulation_map, simulation.apply_simulation_map,
         dict(F=SIM_MAP, z=[0, 1, 2, 3], rng=np.random.default_rng(0))),
    Call(adaptive.transcript_distributions, adaptive.transcript_distributions, dict(round_pair=_rr_round, k=2)),
    Call(adaptive.composed_map_distribution, adaptive.composed_map_distribution,
         dict(round_pair=_rr_round, k=2, epsilon=math.log(3), delta=0.0)),
    Call(adaptive.run_composed_map, adaptive.run_composed_map,
         dict(round_pair=_rr_round, z=np.array([[0, 1], [2, 3]]), epsilon=math.log(3), delta=0.0,
              rng=np.random.default_rng(0))),
    # ---- composition, calibration -----------------------------------------------------------------------------
    Call(composition.basic_composition, composition.basic_composition, dict(epsilons=[0.1, 0.2], deltas=[0.0, 1e-6])),
    Call(composition.advanced_composition, composition.advanced_composition,
         dict(epsilon=0.1, delta=1e-6, k=10, delta_prime=1e-6)),
    Call(composition.advanced_composition_drv, composition.advanced_composition_drv,
         dict(epsilon=0.1, delta=1e-6, k=10, delta_prime=1e-6)),
    Call(composition.leaky_randomized_response_pld, composition.leaky_randomized_response_pld,
         dict(epsilon=1.0, delta=0.1)),
    Call(composition.optimal_composition_pld, composition.optimal_composition_pld, dict(epsilon=0.5, delta=0.01, k=5)),
    Call(composition.optimal_composition_delta, composition.optimal_composition_delta,
         dict(epsilon=0.5, delta=0.01, k=5, epsilon_total=1.0)),
    Call(composition.optimal_composition_epsilon, composition.optimal_composition_epsilon,
         dict(epsilon=0.5, delta=0.01, k=5, delta_total=0.1)),
    Call(composition.heterogeneous_composition_pld, composition.heterogeneous_composition_pld,
         dict(epsilons=[0.5, 1.0], deltas=[0.0, 0.01], value_step=None)),
    Call(composition.heterogeneous_composition_delta, composition.heterogeneous_composition_delta,
         dict(epsilons=[0.5, 1.0], deltas=[0.0, 0.01], epsilon_total=1.0, value_step=0.01)),
    Call(composition.heterogeneous_composition_epsilon, composition.heterogeneous_composition_epsilon,
         dict(epsilons=[0.5, 1.0], deltas=[0.0, 0.01], delta_total=0.1, value_step=None)),
    Call(composition.murtagh_vadhan_delta, composition.murtagh_vadhan_delta,
         dict(epsilons=[0.5, 1.0], epsilon_total=1.0, deltas=[0.0, 0.01])),
    Call(composition.murtagh_vadhan_exact, composition.murtagh_vadhan_exact,
         dict(epsilons=[0.5, 1.0], delta_total=0.1, deltas=None)),
    Call(calibration.advanced_composition_per_step_epsilon, calibration.advanced_composition_per_step_epsilon,
         dict(epsilon_total=1.0, k=10, delta_prime=1e-6)),
    Call(calibration.optimal_composition_per_step_epsilon, calibration.optimal_composition_per_step_epsilon,
         dict(epsilon_total=1.0, delta_total=1e-6, k=10)),
    Call(calibration.gaussian_sigma, calibration.gaussian_sigma, dict(epsilon=1.0, delta=1e-6, sensitivity=1.0)),
    # ---- renyi, rdp_accounting, zcdp, subsampling, dpsgd ---------------------------------------------------
    Call(renyi.gaussian_rdp, renyi.gaussian_rdp, dict(alpha=2.0, sigma=1.0, sensitivity=1.0)),
    Call(renyi.laplace_rdp, renyi.laplace_rdp, dict(alpha=2.0, scale=1.0, sensitivity=1.0)),
    Call(renyi.randomized_response_rdp, renyi.randomized_response_rdp, dict(alpha=2.0, epsilon=1.0)),
    Call(renyi.mechanism_rdp, renyi.mechanism_rdp, dict(alpha=[2.0, 4.0], mechanism=RR)),
    Call(RDPCurve, RDPCurve, dict(orders=ORDERS, epsilons=[0.25, 0.5, 1.0])),
    Call(RDPCurve.from_function, RDPCurve.from_function, dict(fn=lambda a: a / 4, orders=ORDERS)),
    Call(RDPCurve.from_mechanism, RDPCurve.from_mechanism, dict(mechanism=GaussianMechanism(2.0), orders=ORDERS)),
    Call(RDPCurve.gaussian, RDPCurve.gaussian, dict(sigma=2.0, sensitivity=1.0, orders=ORDERS)),
    Call(RDPCurve.laplace, RDPCurve.laplace, dict(scale=2.0, sensitivity=1.0, orders=ORDERS)),
    Call(RDPCurve.randomized_response, RDPCurve.randomized_response, dict(epsilon=1.0, orders=ORDERS)),
    Call(RDPCurve.zcdp, RDPCurve.zcdp, dict(rho=0.1, orders=ORDERS)),
    Call(RDPCurve.compose, CURVE.compose, dict(other=CURVE)),
    Call(RDPCurve.self_compose, CURVE.self_compose, dict(k=10)),
    Call(RDPCurve.epsilon, CURVE.epsilon, dict(delta=1e-6, method="improved")),
    Call(RDPCurve.epsilon_and_order, CURVE.epsilon_and_order, dict(delta=1e-6, method="classic")),
    Call(RDPCurve.delta, CURVE.delta, dict(epsilon=2.0, method="improved")),
    Call(rdp_accounting.compose_rdp, lambda rdp1, rdp2: rdp_accounting.compose_rdp(rdp1, rdp2),
         dict(rdp1=[0.1, 0.2], rdp2=[0.3, 0.4]), aliases={"rdp1": ("rdp_values",), "rdp2": ("rdp_values",)}),
    Call(rdp_accounting.rdp_to_dp_epsilon, rdp_accounting.rdp_to_dp_epsilon,
         dict(orders=ORDERS, rdp=[0.25, 0.5, 1.0], delta=1e-6, method="improved")),
    Call(rdp_accounting.rdp_to_dp_epsilon_and_order, rdp_accounting.rdp_to_dp_epsilon_and_order,
         dict(orders=ORDERS, rdp=[0.25, 0.5, 1.0], delta=1e-6, method="classic")),
    Call(rdp_accounting.rdp_to_dp_delta, rdp_accounting.rdp_to_dp_delta,
         dict(orders=ORDERS, rdp=[0.25, 0.5, 1.0], epsilon=2.0, method="improved")),
    Call(zcdp.gaussian_zcdp, zcdp.gaussian_zcdp, dict(sigma=2.0, sensitivity=1.0)),
    Call(zcdp.zcdp_rdp, zcdp.zcdp_rdp, dict(alpha=2.0, rho=0.1)),
    Call(zcdp.compose_zcdp, lambda rho1, rho2: zcdp.compose_zcdp(rho1, rho2), dict(rho1=0.1, rho2=0.2),
         aliases={"rho1": ("rhos",), "rho2": ("rhos",)}),
    Call(zcdp.pure_dp_to_zcdp, zcdp.pure_dp_to_zcdp, dict(epsilon=1.0)),
    Call(zcdp.zcdp_to_dp_epsilon, zcdp.zcdp_to_dp_epsilon, dict(rho=0.1, delta=1e-6, method="improved")),
    Call(zcdp.zcdp_to_dp_delta, zcdp.zcdp_to_dp_delta, dict(rho=0.1, epsilon=1.0, method="improved")),
    Call(zcdp.zcdp_rho_for_dp, zcdp.zcdp_rho_for_dp, dict(epsilon=1.0, delta=1e-6, method="bun_steinke")),
    Call(subsampling.fixed_size_amplification, subsampling.fixed_size_amplification, dict(epsilon=1.0, delta=1e-6,
                                                                                         q=0.1)),
    Call(subsampling.fixed_size_amplification_epsilon, subsampling.fixed_size_amplification_epsilon,
         dict(epsilon=1.0, q=0.1)),
    Call(subsampling.poisson_subsampled_gaussian_rdp, subsampling.poisson_subsampled_gaussian_rdp,
         dict(q=0.01, sigma=1.0, orders=[2.0, 2.5, 8.0])),
    Call(subsampling.poisson_subsampled_rdp_bound, subsampling.poisson_subsampled_rdp_bound,
         dict(rdp=GaussianMechanism(1.0), q=0.01, orders=[2.0, 3.0])),
    Call(dpsgd.dpsgd_rdp, dpsgd.dpsgd_rdp, dict(q=0.01, sigma=1.0, steps=100, orders=ORDERS)),
    Call(dpsgd.dpsgd_epsilon, dpsgd.dpsgd_epsilon, dict(q=0.01, sigma=1.0, steps=100, delta=1e-5, orders=ORDERS,
                                                        method="improved")),
    Call(dpsgd.dpsgd_epsilon_and_order, dpsgd.dpsgd_epsilon_and_order,
         dict(q=0.01, sigma=1.0, steps=100, delta=1e-5, orders=ORDERS, method="classic")),
    Call(dpsgd.dpsgd_delta, dpsgd.dpsgd_delta, dict(q=0.01, sigma=1.0, steps=100, epsilon=2.0, orders=ORDERS,
                                                    method="improved")),
    Call(dpsgd.dpsgd_sigma_for_epsilon, dpsgd.dpsgd_sigma_for_epsilon,
         dict(q=0.01, steps=100, epsilon=2.0, delta=1e-5, orders=ORDERS, method="improved")),
    Call(dpsgd.scenario1_laplace_scale, dpsgd.scenario1_laplace_scale,
         dict(epsilon=1.0, steps=10, m=10, n=100, sensitivity=1.0)),
    Call(dpsgd.scenario2_gaussian_sigma, dpsgd.scenario2_gaussian_sigma,
         dict(epsilon=1.0, delta=1e-5, steps=10, n=100, sensitivity=1.0, tight=True, method="bun_steinke")),
    Call(dpsgd.scenario3_rdp, dpsgd.scenario3_rdp,
         dict(sigma=1.0, q=0.01, steps=100, batch_size=10.0, sensitivity=1.0, orders=ORDERS, tight=True)),
    Call(dpsgd.scenario3_epsilon, dpsgd.scenario3_epsilon,
         dict(sigma=1.0, q=0.01, steps=100, delta=1e-5, batch_size=10.0, sensitivity=1.0, orders=ORDERS,
              tight=True, method="classic")),
    Call(dpsgd.normaliser_leak_delta, dpsgd.normaliser_leak_delta, dict(epsilon=1.0, n=455, steps=30, dim=31)),
    Call(dpsgd.normaliser_leak_epsilon, dpsgd.normaliser_leak_epsilon, dict(delta=1e-5, n=455, steps=30, dim=31)),
    Call(pld_calibration.poisson_gaussian_pld_epsilon, pld_calibration.poisson_gaussian_pld_epsilon,
         dict(noise_multiplier=1.0, sample_rate=0.1, steps=10, delta=1e-5, grid=1e-2)),
    Call(pld_calibration.poisson_gaussian_pld_multiplier, pld_calibration.poisson_gaussian_pld_multiplier,
         dict(epsilon=2.0, sample_rate=0.1, steps=10, delta=1e-5, orders=ORDERS, grid=1e-2, source="compute")),
    # ---- datasets, training -----------------------------------------------------------------------------------
    Call(datasets.Split, datasets.Split, dict(X_train=X, y_train=Y, X_test=X, y_test=Y, feature_names=("a", "b"))),
    Call(datasets.breast_cancer, datasets.breast_cancer, dict(test_fraction=0.2, seed=0)),
    Call(training.logistic_loss, training.logistic_loss, dict(theta=THETA, X=X, y=Y, l2=0.1)),
    Call(training.per_example_gradients, training.per_example_gradients, dict(theta=THETA, X=X, y=Y)),
    Call(training.accuracy, training.accuracy, dict(theta=THETA, X=X, y=Y)),
    Call(training.gradient_descent, training.gradient_descent, dict(X=X, y=Y, steps=5, learning_rate=0.1, l2=0.1)),
    Call(training.noisy_sgd, training.noisy_sgd,
         dict(X=X, y=Y, steps=3, learning_rate=0.1, clip_norm=1.0, noise_scale=0.5, normaliser=2.0,
              rng=np.random.default_rng(0), sampling="poisson", sample_rate=0.5, sample_size=None, noise="gaussian",
              clip_ord=2, l2=0.0, runs=2)),
    # ---- interactive --------------------------------------------------------------------------------------------
    Call(ia.Adversary, ia.Adversary, dict(policy=_policy, name="adv")),
    Call(ia.Adversary.action_probs, ia.fixed_adversary([0]).action_probs, dict(transcript=())),
    Call(ia.fixed_adversary, ia.fixed_adversary, dict(actions=[0, 0], name="two")),
    Call(ia.state_of, ia.state_of, dict(transcript=TRANSCRIPTS.transcripts[0], k=1)),
    Call(ia.check_transcript, ia.check_transcript, dict(transcript=TRANSCRIPTS.transcripts[0], name="transcript"),
         aliases={"name": ("transcript",)}),
    Call(ia.Decomposition, ia.Decomposition,
         dict(epsilon=1.0, delta=0.0, mechanism=RR_SYS, leak=DECOMPOSITION.leak, core=DECOMPOSITION.core)),
    Call(ia.Decomposition.pure_part, DECOMPOSITION.pure_part, {}),
    Call(ia.Decomposition.mixture_table, DECOMPOSITION.mixture_table, {}),
    Call(ia.decompose, ia.decompose, dict(mechanism=RR_SYS, epsilon=1.0, delta=0.0)),
    Call(ia.rr_weights, ia.rr_weights, dict(epsilon=1.0, delta=0.1)),
    Call(ia.best_adversary, ia.best_adversary, dict(system=RR_SYS2, epsilon=1.0, alpha=None, direction="both",
                                                    max_states=10_000)),
    Call(ia.worst_case_delta, ia.worst_case_delta, dict(system=RR_SYS2, epsilon=1.0, direction="both",
                                                        max_states=10_000)),
    Call(ia.worst_case_epsilon, ia.worst_case_epsilon, dict(system=RR_SYS2, direction="forward", max_states=10_000)),
    Call(ia.worst_case_renyi, ia.worst_case_renyi, dict(system=RR_SYS2, alpha=2.0, direction="both",
                                                        max_states=10_000)),
    Call(ia.Composition, ia.Composition, dict(mechanisms=(RR_SYS, RR_SYS), order="concurrent")),
    Call(ia.Composition.allowed, ia.concurrent(RR_SYS, RR_SYS).allowed, dict(state=((), ()))),
    Call(ia.FunctionMechanism, ia.FunctionMechanism, dict(respond=_respond, queries=("ask",), answers=("0", "1"),
                                                          rounds=2)),
    Call(ia.HiddenStateMechanism, ia.HiddenStateMechanism,
         dict(prior=RR_SYS.prior, channel=RR_SYS.channel, rounds=2, queries=("ask",), answers=("0", "1"),
              halt_after=None, halt_on=(), halt_answer=0)),
    Call(ia.InteractiveMechanism.log_answer_pmfs, RR_SYS2.log_answer_pmfs, dict(history=(), query=0)),
    Call(ia.InteractiveMechanism.answer_pmfs, RR_SYS2.answer_pmfs, dict(history=((0, 1),), query=0)),
    Call(ia.InteractiveMechanism.log_history_probs, RR_SYS2.log_history_probs, dict(history=((0, 1),)),
         log_result=True),
    Call(ia.TableMechanism, ia.TableMechanism, dict(table=ia.answer_table(RR_SYS2), rounds=2, queries=("ask",),
                                                    answers=("0", "1"), atol=1e-9)),
    Call(ia.answer_table, ia.answer_table, dict(mechanism=RR_SYS2)),
    Call(ia.as_composition, ia.as_composition, dict(system=RR_SYS)),
    Call(ia.concurrent, lambda mechanism1, mechanism2: ia.concurrent(mechanism1, mechanism2),
         dict(mechanism1=RR_SYS, mechanism2=RR_SYS), aliases={"mechanism1": ("mechanisms",),
                                                              "mechanism2": ("mechanisms",)}),
    Call(ia.sequential, lambda mechanism1, mechanism2: ia.sequential(mechanism1, mechanism2),
         dict(mechanism1=RR_SYS, mechanism2=RR_SYS), aliases={"mechanism1": ("mechanisms",),
                                                              "mechanism2": ("mechanisms",)}),
    Call(ia.TranscriptDistribution, ia.TranscriptDistribution,
         dict(transcripts=TRANSCRIPTS.transcripts, log_p=TRANSCRIPTS.log_p, log_q=TRANSCRIPTS.log_q)),
    Call(ia.TranscriptDistribution.delta, TRANSCRIPTS.delta, dict(epsilon=0.5, direction="both")),
    Call(ia.TranscriptDistribution.renyi, TRANSCRIPTS.renyi, dict(alpha=2.0, direction="forward")),
    Call(ia.TranscriptDistribution.epsilon, TRANSCRIPTS.epsilon, dict(direction="backward")),
    Call(ia.TranscriptDistribution.pld, TRANSCRIPTS.pld, dict(direction="forward")),
    Call(ia.describe_transcript, ia.describe_transcript, dict(transcript=TRANSCRIPTS.transcripts[0], system=RR_SYS)),
    Call(ia.transcript_distribution, ia.transcript_distribution,
         dict(adversary=ia.fixed_adversary([0, 0]), system=RR_SYS2, max_transcripts=1000)),
    Call(ex.randomized_response_system, ex.randomized_response_system, dict(epsilon=1.0, rounds=2)),
    Call(ex.stateless_system, ex.stateless_system,
         dict(channel=np.array([[[0.75, 0.25]], [[0.25, 0.75]]]), rounds=1, queries=None, answers=None)),
    Call(ex.sticky_randomized_response, ex.sticky_randomized_response, dict(epsilon=1.0, flip=0.2, rounds=2)),
    Call(ex.discrete_laplace_logpmf, ex.discrete_laplace_logpmf, dict(k=[0, 1, -2], scale=1.0), log_result=True),
    Call(ex.discrete_laplace_logsf, ex.discrete_laplace_logsf, dict(t=[0, 1, -2], scale=1.0), log_result=True),
    Call(ex.sparse_vector_system, ex.sparse_vector_system,
         dict(epsilon=1.0, c=1, rounds=2, query_values=[[0, 1], [1, 0]], threshold=0, threshold_range=None,
              query_labels=None)),
    Call(ex.laplace_counter_system, ex.laplace_counter_system,
         dict(epsilon=1.0, c=1, query_values=[[0, 1], [1, 1]], low=-2, high=3, query_labels=None)),
    Call(ex.guess_and_check_system, ex.guess_and_check_system,
         dict(epsilon=1.0, c=1, rounds=2, queries=[[0, 1, 0]], tolerance=1, low=-2, high=3, threshold_range=None)),
    # ---- plotting, widgets ------------------------------------------------------------------------------------
    Call(plotting.course_style, plotting.course_style, {}),
    Call(plotting.new_figure, plotting.new_figure, dict(ncols=2, figsize=(4.0, 2.0))),
    Call(plotting.tex_number, plotting.tex_number, dict(x=1e-6)),
    Call(plotting.plot_privacy_profile, plotting.plot_privacy_profile,
         dict(curves={"RR": RR_PLD}, epsilons=[0.0, 1.0], ax=None, log_delta=True)),
    Call(plotting.plot_pld, plotting.plot_pld, dict(pld=RR_PLD, ax=None, bins=20, label="rr", show_mean=True)),
    Call(plotting.plot_composition, plotting.plot_composition,
         dict(ks=[1, 2, 3], curves={"basic": [0.1, 0.2, 0.3]}, ax=None, logx=True, logy=False, ylabel="eps")),
    Call(plotting.plot_composition_bounds, plotting.plot_composition_bounds,
         dict(epsilon=0.1, ks=[1, 10], delta_prime=1e-6, delta=0.0, ax=None, logx=True)),
    Call(plotting.plot_rdp_curves, plotting.plot_rdp_curves,
         dict(orders=ORDERS, curves={"g": [0.1, 0.2, 0.4]}, ax=None, logy=True)),
    Call(plotting.plot_pmf_pair, plotting.plot_pmf_pair,
         dict(p=P2, q=Q2, outcomes=["0", "1"], labels=("P", "Q"), ax=None)),
    Call(plotting.plot_simulation_map, plotting.plot_simulation_map,
         dict(F=SIM_MAP, row_labels=[str(o) for o in leaky.LEAKY_OUTCOMES], ax=None)),
    Call(plotting.plot_simulation_check, plotting.plot_simulation_check,
         dict(pushed_p=P2, pushed_q=Q2, p=P2, q=Q2, ax=None)),
    Call(widgets.widgets_available, widgets.widgets_available, {}),
    # ---- notebook, style (what a student sees) ----------------------------------------------------------------
    Call(notebook.brief_errors, notebook.brief_errors, dict(exercises={"f": "Exercise 1(a)"})),
    Call(notebook.exercise_label, notebook.exercise_label, dict(grade_id="ex1a_channel")),
    Call(style.use_course_fonts, _fonts_in_context, {}),
    # ---- testing (what a test cell uses) ------------------------------------------------------------------------
    Call(testing.count_python_lines, _count_lines, dict(func=len)),
    Call(testing.is_cell_code, testing.is_cell_code, dict(filename="<string>")),
    Call(testing.library_calls, _library_calls, dict(func=len)),
    Call(testing.library_function_name, testing.library_function_name,
         dict(code=testing.library_calls.__code__, library_dir=testing.LIBRARY_DIR)),
    Call(widgets.StaticExplorer, widgets.StaticExplorer, dict(figure=plotting.new_figure()[0],
                                                              draw=lambda **kw: plotting.new_figure()[0])),
    Call(widgets.pld_explorer, widgets.pld_explorer, dict(mechanism="Laplace")),
    Call(widgets.composition_explorer, widgets.composition_explorer, dict(mechanism="Gaussian")),
    Call(widgets.simulation_explorer, widgets.simulation_explorer, dict(p=P3, q=Q3, epsilon=0.5, delta=None)),
    Call(widgets.dpsgd_explorer, widgets.dpsgd_explorer, dict(sigma=1.1, q=0.01, steps=100, delta=1e-5)),
    Call(widgets.rr_accuracy_explorer, widgets.rr_accuracy_explorer, dict(true_fraction=0.3, surveys=200, seed=0)),
]
"""One valid call of every public target (a target may have several calls, told apart by ``label``)."""

_ = AtomicPLD  # AtomicPLD is abstract: its public methods are covered through the concrete classes above
