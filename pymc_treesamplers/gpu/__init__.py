"""GPU backend of the exact Gaussian BART sweep (issue 32), with numba-cuda (``pip install .[gpu]``): grow/prune, or
the CGM move set (grow, prune, change, swap).

Design: everything lives on the device; the host launches once per sweep.

* Device state, kept across sweeps: split codes ``(p, n)`` (uint8/uint16), the leaf slot of every row in every
  tree ``(m, n)`` uint8 (node slots are never compacted, so a prune relabels only the pruned children's rows),
  the running residual ``(n,)`` (float32 or float64), each tree's node table (rule, children, depth, row
  count, leaf value, each node's min/max code per split column, kept from the pass that created the node),
  the xoroshiro128+ state, the parameters (sigma^2 included).
* Per tree: one thread draws the proposal from the node table alone (grow: leaf, variable, cut among the
  node's valid cuts; prune: node; change: internal node and a new rule from its prior; swap: a parent's rule
  with its internal child's) and writes the subtree it re-partitions as a *site* (its nodes with the proposed
  rules, and a mask of the leaf slots whose rows descend it); all threads make one pass over the rows that
  applies the previous tree's accepted change (its rows descend the pending site to their new leaf slots; the
  residual takes the new leaf values) and reduces tree ``j``'s leaf sums (its fit added back), each site leaf's
  row count, sum and code ranges, and the residual sum of squares (read by the sigma^2 draw at tree 0); one
  thread decides (Metropolis-Hastings ratio, exact tree prior with valid cuts), draws all leaves and queues the
  change for the next pass.
* Driver ``coop``: the whole sweep is one launch of a grid of resident blocks, grid barriers (atomics, or
  cooperative groups') between the phases; no host work inside a sweep. The proposal of tree ``j + 1`` (it
  needs only that tree's node table) is drawn by the deciding thread while the other blocks pass over the rows
  for tree ``j``: per tree the critical path is barrier, pass, barrier, decision. Driver ``launch`` (where
  neither barrier runs): two launches per tree on one stream, no synchronisation inside a sweep.

The decisions are written once (:func:`.decisions.build`) and compiled for both the CPU twin (numba) and the
device (numba-cuda), with the same random stream; the exactness tests run the twin against enumeration and the
device kernels (in numba-cuda's simulator) against the twin, draw for draw.

The modules, by role:

* :mod:`.layout`: the node tables' fields, the exchange buffers' words, the parameter vector, their allocation;
* :mod:`.decisions`: the per-tree decisions (proposal, Metropolis-Hastings, leaf and sigma^2 draws, the chain's
  generator), one source for both targets; the engine's tree-prior formulas it mirrors are listed there;
* :mod:`.twin`: the CPU twin (the decisions compiled by numba, a CPU row pass, the sweep loop);
* :mod:`.tables`: the host's reads and writes of the node tables (a new chain, leaves, fit, preorder);
* :mod:`.kernels`: the device kernels (row pass, one-launch sweep, grid barriers);
* :mod:`.device_chain`: :class:`DeviceChain`, one chain on the device (or on the twin), its options and sweeps.
"""

from .layout import MAXN, PMAX

__all__ = ["DeviceChain", "MAXN", "PMAX", "available"]


def available() -> bool:
    """True when numba-cuda can see a CUDA device (or its simulator is on)."""
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:
        return False


def __getattr__(name):  # numba.cuda imported only when the sweep is used
    if name == "DeviceChain":
        from .device_chain import DeviceChain

        return DeviceChain
    raise AttributeError(name)
