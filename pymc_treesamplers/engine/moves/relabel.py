"""Exact Gibbs redraw of a split rule among the rules that cut the node's rows the same way.

At an internal node ``k`` with children rows ``L`` (left) and ``R`` (right), a rule ``(v, c)``
gives the same bipartition when ``max code_v(L) <= c < min code_v(R)`` (children kept), or the
mirror image when ``max code_v(R) <= c < min code_v(L)`` (children swapped). All such trees have
the same leaves with the same rows and depths, so their posteriors differ only in ``k``'s rule
prior ``w_v / W_avail / n_cuts_v``; the set of them is the same from any member. Drawing a member
in proportion to that prior is therefore an exact Gibbs update, accepted always.

This is what moves a root split on x1 to the same split on x3 on the Wu et al. (2007) data,
where every other route passes through trees of negligible posterior mass at low noise.
"""

import numba

from ..nodes import CUT, END, LEFT, RIGHT, START, VAR
from ..prior import code_range
from ..tree import INTERNAL, random_node, refresh_subtree_prior, repartition_subtree


@numba.njit(cache=True, nogil=True)
def relabel_gibbs(rng, t, data, order):
    """Redraw the rule (and orientation) of a uniformly chosen internal node within its class.

    Returns True if the tree changed. ``order``: int scratch longer than the number of nodes.
    """
    k = random_node(rng, t, INTERNAL)
    if k < 0:
        return False
    ti = t.ints
    perm = t.perm
    codes = data.codes
    wsplit = data.wsplit
    a = ti[k, LEFT]
    b = ti[k, RIGHT]
    # pass 1: total prior weight of the class; pass 2: pick a member
    total = 0.0
    for sweep in range(2):
        target = rng.random() * total if sweep == 1 else 0.0
        for v in range(codes.shape[0]):
            if wsplit[v] <= 0.0:
                continue
            mn_a, mx_a = code_range(codes[v], perm, ti[a, START], ti[a, END])
            mn_b, mx_b = code_range(codes[v], perm, ti[b, START], ti[b, END])
            # the node's valid cuts of v: [min, max) over all its rows
            n_cuts = max(mx_a, mx_b) - min(mn_a, mn_b)
            wt = wsplit[v] / n_cuts if n_cuts > 0 else 0.0
            for swap in range(2):
                lo, hi = (mx_a, mn_b) if swap == 0 else (mx_b, mn_a)
                if hi <= lo:
                    continue
                if sweep == 0:
                    total += wt * (hi - lo)
                    continue
                if target < wt * (hi - lo):
                    c = lo + min(int(target / wt), hi - lo - 1)
                    if v == ti[k, VAR] and c == ti[k, CUT] and swap == 0:
                        return False
                    ti[k, VAR] = v
                    ti[k, CUT] = c
                    if swap == 1:
                        ti[k, LEFT] = b
                        ti[k, RIGHT] = a
                    repartition_subtree(t, data, k, order)
                    refresh_subtree_prior(t, data, k, order)
                    return True
                target -= wt * (hi - lo)
    return False
