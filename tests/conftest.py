import os
import sys

# tests import their helpers (exact.py, kernel_chain.py) as top-level modules
sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("PYTENSOR_FLAGS", "")
