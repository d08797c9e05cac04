"""What the tests share: exact answers by enumeration (exact.py), the sampler registry (samplers.py), kernel-level
chains (kernel_chain.py), fitted models (fits.py) and random trees (trees.py)."""
