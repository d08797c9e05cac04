"""PyMC step methods for BART variables (thin adapters around the numba kernels)."""
