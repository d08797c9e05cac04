"""The GPU sweep's memory: the node tables' fields, the exchange buffers' words and the parameter vector, as the
decisions (:mod:`.decisions`), the CPU twin (:mod:`.twin`), the device kernels (:mod:`.kernels`) and the driver
(:mod:`.driver`) all index them, and the functions that allocate them.

>>> ints, lohi, cnt, val, log_avail, used, top = new_state(2, 3)
>>> ints.shape, int(used.sum())
((2, 256, 6), 0)
"""

from __future__ import annotations

import math

import numpy as np

MAXN = 256  # node slots per tree (leaf slots of rows are uint8)
PMAX = 32  # most split columns the device pass handles
NACC = 8  # leaf slots the device pass sums in per-thread registers/local memory (higher slots: shared atomics)
SUBMAX = 31  # most nodes of the subtree a proposal re-partitions (a change/swap above a larger one stays put)
MASKW = MAXN // 16  # 16-bit words of a slot mask (16 bits a word keeps every int32 word non-negative)

# node table fields (ints[j, k, :])
VAR, CUT, LEFT, RIGHT, PARENT, DEPTH = range(6)
N_INTS = 6

# move kinds
NONE, GROW, PRUNE, CHANGE, SWAP = range(5)

# A site (int32 words in words): the subtree a move re-partitions, with its rules as proposed. S_N nodes in
# breadth-first order (a parent before its children; node 0 the subtree's top), each VAR, CUT (-1: a leaf),
# LEFT, RIGHT (site indices), SLOT (the node table slot; -1 for a grow's children before they get one); S_MASK:
# the bits of the tree's leaf slots whose rows it takes (a grow: the leaf; a change/swap: the subtree's leaves;
# a prune: the two children). A row in the mask descends the site from node 0 to one of its leaves.
S_N, S_MASK = 0, 1
S_NODES = 1 + MASKW
N_VAR, N_CUT, N_LEFT, N_RIGHT, N_SLOT = range(5)
S_FIELDS = 5
SITE_LEN = S_NODES + S_FIELDS * SUBMAX

# words (int32): control words, the proposal's site, the pending change's site, then the pass's outputs
I_J, I_KIND, I_K, I_TOP, I_ERR, I_JP = range(6)
I_SITE = 6  # the proposal of tree words[I_J] (S_N = 0: no pass output but the leaf sums)
I_PSITE = I_SITE + SITE_LEN  # the accepted change of tree words[I_JP] the next pass applies (S_N = 0: none)
I_CNT = I_PSITE + SITE_LEN  # output: rows reaching each site node (the pass fills leaves, the decision the rest)
I_RANGE = I_CNT + SUBMAX  # output: 2 p code bounds per site node: I_RANGE + 2 p q + (w: min, p + w: max)
INT_BIG = 2**31 - 1

# floats (float64): leaf values in, sums out
F_OLD, F_NEW, F_CUR, F_SUM = 0, MAXN, 2 * MAXN, 3 * MAXN
F_SSUM = 4 * MAXN  # output: sum of the rows reaching each site leaf
F_SSR = 4 * MAXN + SUBMAX  # output: residual sum of squares after the pending change
N_FLOATS = F_SSR + 1

# params (float64): priors, sigma^2 (written by the sigma^2 draw), the chain's settings; the move probabilities
# (grow, prune, change; swap the rest) and the largest subtree a change/swap re-partitions (<= SUBMAX)
(P_ALPHA, P_BETA, P_MU0, P_S2MU, P_SIGMA2, P_PGROW, P_A0, P_B0, P_N, P_FIXED, P_PPRUNE, P_PCHANGE,
 P_SUBCAP) = range(13)
N_PARAMS = 13

NEG_INF = -math.inf
TWO_PI = 2.0 * math.pi
INV_2_53 = 1.0 / 9007199254740992.0


def n_words(p: int) -> int:
    return I_RANGE + 2 * p * SUBMAX


def new_state(m: int, p: int):
    """Node tables of ``m`` trees: ``(ints, lohi, cnt, val, log_avail, used, top)``; ``top[j]``: one past tree
    ``j``'s highest used slot (every loop over a tree's slots stops there). ``lohi[j, k]``: the code range of
    node ``k``'s rows per split column; ``log_avail[j, k]``: log of the split weight with a valid cut there
    (-inf: none), kept for internal nodes too (a node pruned back to a leaf reads it)."""
    ints = np.full((m, MAXN, N_INTS), -1, dtype=np.int64)
    lohi = np.zeros((m, MAXN, 2, p), dtype=np.int64)
    cnt = np.zeros((m, MAXN), dtype=np.int64)
    val = np.zeros((m, MAXN))
    log_avail = np.full((m, MAXN), NEG_INF)
    used = np.zeros((m, MAXN), dtype=np.uint8)
    top = np.zeros(m, dtype=np.int64)
    return ints, lohi, cnt, val, log_avail, used, top


def seed_state(rng) -> np.ndarray:
    """Two xoroshiro128+ states (``(2, 2)`` nonzero uint64 words: the proposals', the decisions') from a numpy
    Generator."""
    return rng.integers(1, 2**63 - 1, size=(2, 2), dtype=np.int64).astype(np.uint64)


def new_buffers(p: int):
    """The exchange buffers ``(words, floats, prop)``, two rows each, nothing pending."""
    words = np.zeros((2, n_words(p)), dtype=np.int32)
    words[:, I_JP] = -1
    return words, np.zeros((2, N_FLOATS)), np.zeros((2, 4))


def move_params(params: np.ndarray, move_probs, subtree_cap: int = SUBMAX) -> None:
    """Write the move probabilities ``(grow, prune, change, swap)`` and the subtree cap into ``params``."""
    params[P_PGROW], params[P_PPRUNE], params[P_PCHANGE] = move_probs[0], move_probs[1], move_probs[2]
    params[P_SUBCAP] = subtree_cap
