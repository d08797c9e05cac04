"""The numba core: records, node arrays, row passes, the tree prior, leaves, trees, forests, the one
backfitting driver, the one SMC core, the moves (``moves/``) and the sampler updates built from them
(``updates/``). It imports numpy and numba only, never PyMC or PyTensor (tests/test_layout.py checks).
"""
