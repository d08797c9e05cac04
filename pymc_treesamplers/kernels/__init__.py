"""Numba tree-update kernels. They know arrays only: no PyMC, no Python objects in hot loops."""
