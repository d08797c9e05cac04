"""The numba core: records, node arrays, row passes, the tree prior, leaves, trees, forests, the one
backfitting driver, the one SMC core, the moves (``moves/``) and the sampler updates built from them
(``updates/``). It imports numpy and numba only, never PyMC or PyTensor (tests/test_layout.py checks).

What the rest of the package uses of it is named here, and the package imports it from here only (tested); the
submodules are the engine's own, and the tests', which test the pieces:

* **the ways in**: :class:`Chain` (a backfitting chain of ``m`` trees: the steps, ``GFRRegressor``) and
  :class:`Islands` (the single-tree SMC estimators' independent particle filters);
* **the samplers**: each update's scratch record and its options (``new_mh_scratch``, ``new_monotone_scratch``,
  ``new_pg_scratch`` with
  :class:`SMCOptions`, ``new_ct_scratch``, ``new_reshape_scratch``);
* **the records** a step or a likelihood route hands a chain (:class:`Pseudo`, :class:`BasisPseudo`) and those it
  reads (:class:`SplitData`, :class:`TreePrior`);
* **a likelihood record's kernels**: the driver's registries, the node columns, a tree's fit and leaves, the leaf
  algebra of the Gaussian, log-link and basis leaves (the routes' numba code calls these);
* **the rest**: the prior's draw of a tree (and of a monotone tree with its leaves), the Dirichlet split prior, the
  stored format's writer, the threads
  check and numba's pool, the conjugate leaf models of the single-tree estimators.

>>> import numpy as np
>>> from pymc_treesamplers.engine import Chain
>>> Chain.new(np.array([[0, 1, 2, 3]], dtype=np.uint16), 2, alpha=0.95, beta=2.0, mu0=0.0, s2=1.0).m
2
"""

from .basisleaf import (
    add_basis_fit,
    basis_at,
    basis_dim,
    basis_posterior_mean,
    basis_rows,
    cholesky_lower,
    draw_basis_leaves,
    parent_var,
    solve_lower,
    solve_upper,
)
from .chain import Chain
from .driver import register_basis_record, register_likelihood
from .encoding import ALIGN, HEADER, MAGIC, NODE_BYTES, OLDEST, VERSION, blob_layout, encode_forest, encode_preorder
from .gaussian import leaf_loglik
from .leaves import class_counts, n_stats, ng_posteriors, normal_gamma
from .loglink import leaf_laplace_at, leaf_mode
from .monotone import sample_monotone_tree
from .nodes import COEF, END, LEFT, START, VALUE
from .pool import start as start_pool
from .pool import threading_layer
from .prior import sample_prior_tree
from .records import BasisPseudo, Pseudo, SplitData, TreePrior
from .rows import check_threads
from .smc import (
    EXPANSION_LAYER,
    EXPANSION_NODE,
    PROPOSAL_EMPIRICAL,
    PROPOSAL_OPTIMAL,
    PROPOSAL_PRIOR,
    RESAMPLE_MULTINOMIAL,
    RESAMPLE_SYSTEMATIC,
    SMCOptions,
)
from .splitprior import (
    DirichletSplitPrior,
    kernel_weights,
    new_split_weights,
    prior_split_weights,
    update_split_weights,
)
from .tree import add_tree, draw_leaves
from .updates.ct import new_ct_scratch
from .updates.islands import Islands
from .updates.mh import new_mh_scratch
from .updates.monotone import new_monotone_scratch
from .updates.pg import new_pg_scratch
from .updates.reshape import KIND_NAMES, new_reshape_scratch

__all__ = [
    # the ways in
    "Chain", "Islands",
    # the samplers' scratch records and options
    "new_mh_scratch", "new_monotone_scratch", "new_pg_scratch", "new_ct_scratch", "new_reshape_scratch",
    "KIND_NAMES", "SMCOptions",
    "EXPANSION_LAYER", "EXPANSION_NODE", "PROPOSAL_EMPIRICAL", "PROPOSAL_OPTIMAL", "PROPOSAL_PRIOR",
    "RESAMPLE_MULTINOMIAL", "RESAMPLE_SYSTEMATIC",
    # records
    "BasisPseudo", "Pseudo", "SplitData", "TreePrior",
    # a likelihood record's kernels
    "register_likelihood", "register_basis_record", "COEF", "END", "LEFT", "START", "VALUE", "add_tree",
    "draw_leaves", "leaf_loglik", "leaf_laplace_at", "leaf_mode", "add_basis_fit", "basis_at", "basis_dim",
    "basis_posterior_mean", "basis_rows", "cholesky_lower", "draw_basis_leaves", "parent_var", "solve_lower",
    "solve_upper",
    # the rest
    "sample_prior_tree", "sample_monotone_tree", "DirichletSplitPrior", "kernel_weights", "new_split_weights",
    "prior_split_weights",
    "update_split_weights", "ALIGN", "HEADER", "MAGIC", "NODE_BYTES", "OLDEST", "VERSION", "blob_layout",
    "encode_forest", "encode_preorder", "check_threads", "start_pool", "threading_layer", "class_counts",
    "n_stats", "ng_posteriors", "normal_gamma",
]
