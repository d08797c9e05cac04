"""Likelihood routes: how a tree update sees the model's likelihood. ``likelihood.py`` reads it from the
PyMC model and builds the record a sweep runs on (:func:`~pymc_treesamplers.routes.likelihood.working_model`,
the one call the steps make); the exact Gaussian pseudo-data, the numba observation families
(``families.py``), their exact augmentations (``augment.py``) and any other elementwise likelihood through its
compiled graph (``graph.py``)."""
