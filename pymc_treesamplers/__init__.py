"""pymc-treesamplers: Bayesian additive regression trees for PyMC with exact tree samplers.

>>> import pymc_treesamplers as pmt
>>> sorted(n for n in pmt.__all__ if n.endswith("Step"))
['CGMStep', 'CTBirthDeathStep', 'GrowPruneStep', 'PGBARTStep', 'ReshapeStep']
"""

import logging
import warnings

# first of the package's modules: numba must know where to cache the package's kernels before one is defined
from . import kernel_cache  # noqa: F401

# isort: split
import pymc as pm

from . import distributed
from .engine import DirichletSplitPrior
from .estimators.gfr import GFRRegressor
from .estimators.smctree import SMCTreeClassifier, SMCTreeRegressor
from .model.bart import BART
from .model.sigma_prior import chipman_sigma2_prior
from .model.split_rules import ContinuousSplitRule, OneHotSplitRule, SubsetSplitRule
from .results import diagnostics, plots
from .results.agreement import agreement, install_advice
from .results.diagnostics import compute_variable_importance, get_variable_inclusion, vi_to_kulprit
from .results.jumps import jump_weights, resample_jump_chain, weighted_mean
from .results.plots import (
    plot_convergence,
    plot_dependence,
    plot_ice,
    plot_pdp,
    plot_scatter_submodels,
    plot_variable_importance,
    plot_variable_inclusion,
)
from .results.predictive import predict, sample_posterior_predictive
from .results.streamed import load_zarr
from .steps.ct import CTBirthDeathStep
from .steps.mh import CGMStep, GrowPruneStep
from .steps.pg import PGBART, PGBARTStep
from .steps.reshape import ReshapeStep
from .steps.scale import NormalScaleGibbs

__all__ = [
    "BART",
    "CGMStep",
    "CTBirthDeathStep",
    "ContinuousSplitRule",
    "DirichletSplitPrior",
    "GFRRegressor",
    "GrowPruneStep",
    "NormalScaleGibbs",
    "OneHotSplitRule",
    "PGBART",
    "PGBARTStep",
    "ReshapeStep",
    "SMCTreeClassifier",
    "SMCTreeRegressor",
    "SubsetSplitRule",
    "agreement",
    "chipman_sigma2_prior",
    "compute_variable_importance",
    "diagnostics",
    "distributed",
    "get_variable_inclusion",
    "plot_convergence",
    "plot_dependence",
    "plot_ice",
    "plot_pdp",
    "plot_scatter_submodels",
    "plot_variable_importance",
    "plot_variable_inclusion",
    "plots",
    "jump_weights",
    "load_zarr",
    "predict",
    "resample_jump_chain",
    "sample_posterior_predictive",
    "vi_to_kulprit",
    "weighted_mean",
]
__version__ = "0.1.0"

# The one-time "compiling the kernels" notice is INFO: shown like PyMC's own sampling messages
# (same rule as pymc/__init__.py: only when the application has not configured logging itself)
_log = logging.getLogger(__name__)
if not logging.root.handlers:
    _log.setLevel(logging.INFO)
    if not _log.handlers:
        _log.addHandler(logging.StreamHandler())

# PyMC's R-hat and ESS warnings, logged after every chain has finished, name what helps a BART fit's chains agree
install_advice()

# Prior predictive draws of BART run its Python rng_fn; PyTensor's numba backend warns that it
# falls back to object mode for it, which is expected and not actionable for users.
warnings.filterwarnings("ignore", message="Numba will use object mode to run BARTRV", category=UserWarning)

# Automatic step assignment: PyMC picks, for each variable, the registered class with the
# highest competence; CGMStep is IDEAL for BART variables, NormalScaleGibbs for the scale of a
# Normal likelihood whose mean holds a BART variable, both INCOMPATIBLE for everything else.
for _step in (CGMStep, NormalScaleGibbs):
    if _step not in pm.step_methods.STEP_METHODS:
        pm.step_methods.STEP_METHODS.append(_step)
