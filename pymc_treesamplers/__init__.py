"""pymc-treesamplers: Bayesian additive regression trees for PyMC with exact tree samplers.

>>> import pymc_treesamplers as pmt
>>> sorted(n for n in pmt.__all__ if n.endswith("Step"))
['CGMStep', 'GrowPruneStep']
"""

import pymc as pm

from .bart import BART
from .steps.mh import CGMStep, GrowPruneStep
from .trace import predict

__all__ = ["BART", "CGMStep", "GrowPruneStep", "predict"]
__version__ = "0.1.0"

# Automatic step assignment: PyMC picks, for each variable, the registered class with the
# highest competence; ours is IDEAL for BART variables and INCOMPATIBLE for everything else.
if CGMStep not in pm.step_methods.STEP_METHODS:
    pm.step_methods.STEP_METHODS.append(CGMStep)
