"""Likelihood routes: how a tree update sees the model's likelihood. ``likelihood.py`` chooses one per output
(:func:`~pymc_treesamplers.routes.likelihood.working_model`, the one call the steps make) behind one interface
(``WorkingModel``): the exact Gaussian pseudo-data (``gaussian.py``), an observation family's working model
(``family.py``) over the numba families' row maths and records (``family_record.py``) and their exact augmentations
(``augment.py``), or any other elementwise likelihood through its compiled graph (``graph.py``); ``reading.py``
reads the likelihood from the PyMC graph."""
