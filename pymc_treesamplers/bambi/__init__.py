"""BART in a bambi formula: ``pmb.Model("y ~ bart(x1, x2) + z + (1|g)", data)``, fitted by the tree steps.

Needs the ``bambi`` extra (``pip install 'pymc-treesamplers[bambi]'``); docs/bambi.md is the guide.

>>> import pymc_treesamplers.bambi as pmb
>>> sorted(pmb.__all__)
['Model', 'bart']
"""

try:
    import bambi  # noqa: F401
except ImportError as err:  # pragma: no cover - the extra is installed wherever the tests run
    raise ImportError("pymc_treesamplers.bambi needs bambi: pip install 'pymc-treesamplers[bambi]'") from err

from .model import Model, bart

__all__ = ["Model", "bart"]
