"""Moves on one tree (grow, prune, change, swap, restructure, splice, reroute, rotate, pivot, relabel):
the proposals the sampler updates in ``engine/updates/`` are built from."""
