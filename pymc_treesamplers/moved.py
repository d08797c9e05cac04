"""The module paths of the package before its top level was grouped (model, results, estimators), kept
importable: ``import pymc_treesamplers.plots`` and ``from pymc_treesamplers.storage import decode_forest``
give the very module now at ``pymc_treesamplers.results.plots`` / ``.results.storage`` (not a copy, so
``monkeypatch.setattr`` on either path patches both).

A finder on ``sys.meta_path`` answers only for the old names in :data:`MOVED`; the package installs it when it
is imported (the package's own modules use the new paths, so nothing needs it earlier).

>>> import pymc_treesamplers.storage as old
>>> import pymc_treesamplers.results.storage as new
>>> old is new
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# old module -> where it lives now
MOVED = {f"pymc_treesamplers.{old}": f"pymc_treesamplers.{new}" for old, new in {
    "bart": "model.bart",
    "binning": "model.binning",
    "callers": "model.callers",
    "covariates": "model.covariates",
    "sigma_prior": "model.sigma_prior",
    "split_rules": "model.split_rules",
    "diagnostics": "results.diagnostics",
    "jumps": "results.jumps",
    "plots": "results.plots",
    "predictive": "results.predictive",
    "storage": "results.storage",
    "gfr": "estimators.gfr",
    "smctree": "estimators.smctree",
}.items()}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module name as the module it moved to."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        # the module under its new name; the import system files it under the old one too
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module) -> None:
        pass  # already executed under its new name


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
