"""Prototypes that are not part of the supported API: ``mpi.py``, a data-parallel sweep over MPI ranks
(docs/distributed-rows.md)."""
