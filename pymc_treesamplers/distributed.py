"""Chains across machines: each chain one dask task running ``pm.sample``, merged into one InferenceData.

:func:`sample` sends a model factory to the workers of a ``dask.distributed`` cluster; each worker builds
the model and samples one chain with the seed that chain would get from ``pm.sample(chains=...)`` on one
machine, so chain i here is chain i there, draw for draw. The chains come back as one InferenceData
(``chain`` coordinates 0..chains-1), ready for :func:`pymc_treesamplers.predict`, ArviZ and ``to_netcdf``.

dask is optional (``pip install pymc-treesamplers[distributed]``): it is imported when :func:`sample`
or :func:`local_cluster` is called, never by ``import pymc_treesamplers``.

How chain i gets pm.sample's seed: ``pm.sample`` spawns one generator per chain from the seed
(``get_random_generator(random_seed).spawn(chains)``), draws the chain's initial-point seed from it and
hands it to the step methods (``setup_chain``), which spawn their own generators from it. A one-chain
``pm.sample`` given ``random_seed=[s_i]`` or ``random_seed=<that int>`` would spawn a *child* of that
seed instead, so it is not chain i. What is: a generator whose seed sequence has the same entropy and
parent spawn key as chain i's and has already spawned i children; its first (only) spawn is then chain
i's generator itself (:class:`ChainSeed`).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

if TYPE_CHECKING:  # pragma: no cover
    from dask.distributed import Client, LocalCluster

__all__ = ["ChainSeed", "ChainsFailed", "current_chain", "local_cluster", "sample"]

_log = logging.getLogger("pymc_treesamplers")

INSTALL_HINT = "pip install pymc-treesamplers[distributed]"

# pm.sample arguments that make no sense for one chain in one task; the reason is the error message
_REFUSED = {
    "cores": "each chain is one task running pm.sample(chains=1, cores=1); the number of workers sets the "
    "parallelism",
    "mp_ctx": "each chain is one task on a worker process; there is no multiprocessing inside it",
    "model": "the model is what model_factory() returns on each worker",
    "trace": "a trace backend object belongs to one process; the chains come back as InferenceData and are "
    "merged here",
}


class ChainsFailed(RuntimeError):
    """Some chains of :func:`sample` failed; the others are not lost.

    Attributes
    ----------
    idata : xarray.DataTree or None
        The chains that finished, merged as :func:`sample` returns them; their ``chain`` coordinates keep
        their indices in the run (chains 0, 2, 3 when chain 1 failed). None when every chain failed.
    failures : dict[int, BaseException]
        Each lost chain's index and its cause: the exception its task raised (with the worker's
        traceback), or ``distributed.scheduler.KilledWorker`` when the worker running it died.
    """

    def __init__(self, failures: Mapping[int, BaseException], idata: xr.DataTree | None, chains: int):
        self.failures = dict(sorted(failures.items()))
        self.idata = idata
        self.chains = chains
        lines = [f"chain {c}: {_describe(e)}" for c, e in self.failures.items()]
        kept = "none finished" if idata is None else (
            f"the {chains - len(self.failures)} finished ones are in .idata")
        super().__init__(f"{len(self.failures)} of {chains} chains failed ({kept}; causes in .failures):\n  "
                         + "\n  ".join(lines))

    def __reduce__(self):
        return type(self), (self.failures, self.idata, self.chains)


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if name == "KilledWorker":
        return f"the worker running it died (KilledWorker: {text})"
    return f"{name}: {text}" if text else name


@dataclass(frozen=True)
class ChainSeed:
    """What reproduces chain ``chain`` of ``pm.sample(chains=..., random_seed=...)`` in a one-chain run.

    ``pm.sample`` gives chain i the i-th spawn of its seed; a one-chain ``pm.sample`` takes the first spawn
    of the seed it gets. :meth:`generator` builds a generator whose seed sequence is chain i's parent with
    i children already spawned, so that its first spawn is chain i's generator.

    >>> import numpy as np
    >>> seeds = ChainSeed.for_chains(42, 3)
    >>> child = np.random.default_rng(42).spawn(3)[2]
    >>> first = seeds[2].generator().spawn(1)[0]
    >>> bool(first.integers(2**30) == child.integers(2**30))
    True
    """

    chain: int
    entropy: int | tuple[int, ...]
    spawn_key: tuple[int, ...]
    pool_size: int
    bit_generator: type

    @classmethod
    def for_chains(cls, random_seed: Any, chains: int) -> list[ChainSeed]:
        """The seeds of ``chains`` chains, as ``pm.sample(chains=chains, random_seed=random_seed)`` makes them."""
        from pymc.util import get_random_generator

        if isinstance(random_seed, int | np.integer) and random_seed == -1:
            raise ValueError("random_seed=-1 is not allowed (as in pm.sample); pass None for fresh seeds")
        if isinstance(random_seed, np.random.RandomState):
            raise TypeError("random_seed must be an int, a sequence of ints or a numpy Generator, not a legacy "
                            "RandomState (as in pm.sample)")
        try:
            rngs = get_random_generator(random_seed).spawn(chains)
        except (TypeError, ValueError) as err:
            raise type(err)(f"random_seed={random_seed!r} is not a seed pm.sample takes: {err}") from err
        out = []
        for i, rng in enumerate(rngs):
            seq = rng.bit_generator.seed_seq
            entropy = tuple(seq.entropy) if isinstance(seq.entropy, Sequence) else seq.entropy
            out.append(cls(i, entropy, tuple(seq.spawn_key), seq.pool_size, type(rng.bit_generator)))
        return out

    def generator(self) -> np.random.Generator:
        """A generator whose first spawn is this chain's generator in the many-chain run."""
        parent = np.random.SeedSequence(self.entropy, spawn_key=self.spawn_key[:-1], pool_size=self.pool_size,
                                        n_children_spawned=self.spawn_key[-1])
        return np.random.Generator(self.bit_generator(parent))


def _require_dask():
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError as err:
        raise ImportError(f"pmt.distributed needs dask.distributed: {INSTALL_HINT}") from err
    return distributed


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def local_cluster(n_workers: int | None = None, **kwargs: Any) -> LocalCluster:
    """A ``LocalCluster`` set up for chains, the one :func:`sample` starts when given no client.

    ``n_workers`` worker processes (default: the cores available) with one thread each (chains in threads
    of one process would take turns at the GIL: PyMC's sampling loop runs in Python), and a chain whose
    worker dies is not run again (``distributed.scheduler.allowed-failures`` 0): on one machine a dying
    worker is almost always the chain's own fault (memory, a crash in compiled code), which would recur.
    Its dashboard (with bokeh installed) listens on a free port: ``cluster.dashboard_link``. ``kwargs`` go
    to ``LocalCluster``. Close it (or use it in a ``with``) when done.

    >>> from dask.distributed import Client  # doctest: +SKIP
    >>> with pmt.distributed.local_cluster(4) as cluster, Client(cluster) as client:  # doctest: +SKIP
    ...     idata = pmt.distributed.sample(build_model, chains=8, client=client, random_seed=1)
    """
    distributed = _require_dask()
    import dask

    if n_workers is None:
        n_workers = _cpu_count()
    options = {"n_workers": n_workers, "threads_per_worker": 1, "processes": True, "dashboard_address": ":0",
               **kwargs}
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        return distributed.LocalCluster(**options)


def _check_arguments(model_factory, chains, kwargs: dict) -> None:
    if not callable(model_factory):
        raise TypeError(f"model_factory must be a callable that builds and returns a PyMC model, got "
                        f"{type(model_factory).__name__}")
    if isinstance(chains, bool) or not isinstance(chains, int | np.integer):
        raise TypeError(f"chains must be an int, got {type(chains).__name__}")
    if chains < 1:
        raise ValueError(f"chains must be at least 1, got {chains}")
    for name, why in _REFUSED.items():
        if name in kwargs:
            raise ValueError(f"{name} is not a pmt.distributed.sample argument: {why}")
    if kwargs.get("return_inferencedata", True) is not True:
        raise ValueError("return_inferencedata=False is not supported: the chains travel and are merged as "
                         "InferenceData")
    if kwargs.get("nuts_sampler") not in (None, "pymc"):
        raise ValueError(f"nuts_sampler={kwargs['nuts_sampler']!r} is not supported: only PyMC's own samplers "
                         "give chain i the seed pm.sample gives it (and a BART model needs them anyway)")
    step = kwargs.get("step")
    if step is not None and not callable(step):
        raise TypeError("step must be a callable step(model) returning the step method(s) for pm.sample: a step "
                        "built here belongs to a model in this process, not to the one the worker builds "
                        "(e.g. step=lambda model: pmt.GrowPruneStep([model['mu']]))")
    initvals = kwargs.get("initvals")
    if isinstance(initvals, Sequence) and not isinstance(initvals, str | bytes) and len(initvals) != chains:
        raise ValueError(f"initvals has {len(initvals)} entries for {chains} chains: give one dict for all chains "
                         "or one per chain")


_TASK = threading.local()  # dask runs tasks in worker threads


def current_chain() -> int | None:
    """The index of the chain the calling code samples in a :func:`sample` task, else None.

    Inside a task ``pm.sample`` runs one chain, so a ``callback``'s ``draw.chain`` is always 0; this
    gives the chain's index in the whole run (to log progress per chain, for instance).
    """
    return getattr(_TASK, "chain", None)


def _run_chain(model_factory: Callable, seed: ChainSeed, kwargs: dict) -> dict:
    """One chain on a worker: build the model, ``pm.sample`` one chain with chain i's seed, return plain
    ``xarray.Dataset`` groups (they pickle as numpy arrays) and what the convergence checks need."""
    import pymc as pm

    _TASK.chain = seed.chain
    try:
        model = model_factory()
        if not isinstance(model, pm.Model):
            raise TypeError(f"model_factory() must return a pm.Model, got {type(model).__name__}")
        kwargs = dict(kwargs)
        with model:
            if kwargs.get("step") is not None:
                kwargs["step"] = kwargs["step"](model)
            idata = pm.sample(chains=1, cores=1, random_seed=seed.generator(), **kwargs)
    finally:
        _TASK.chain = None
    groups = {name: node.to_dataset() for name, node in idata.children.items()}
    return {
        "groups": groups,
        "root_attrs": dict(idata.attrs),
        "free": [rv.name for rv in model.free_RVs],
        "deterministics": [rv.name for rv in model.deterministics],
    }


def _sampling_attrs(ds: xr.Dataset, extra: dict) -> xr.Dataset:
    if "sampling_time" not in ds.attrs:
        return ds
    return ds.assign_attrs(extra)


def _merge(results: Mapping[int, dict], extra_attrs: dict) -> xr.DataTree:
    """One DataTree from one-chain results: groups with a ``chain`` dimension concatenated in chain order,
    each chain keeping its index as coordinate; the other groups (observed and constant data) are the same
    for every chain and taken from the first."""
    order = sorted(results)
    names: list[str] = []
    for c in order:
        names += [n for n in results[c]["groups"] if n not in names]
    tree: dict[str, xr.Dataset] = {"/": xr.Dataset(attrs=results[order[0]]["root_attrs"])}
    for name in names:
        parts = [(c, results[c]["groups"][name]) for c in order if name in results[c]["groups"]]
        first = parts[0][1]
        if "chain" in first.dims:
            ds = xr.concat([p.assign_coords(chain=[c]) for c, p in parts], dim="chain", data_vars="all",
                           coords="different", compat="equals", join="exact", combine_attrs="override")
            ds = _sampling_attrs(ds, extra_attrs)
        else:
            ds = first
        tree[f"/{name}"] = ds
    return xr.DataTree.from_dict(tree)


def _convergence_checks(idata: xr.DataTree, names: dict) -> None:
    """PyMC's checks (divergences, tree depth, R-hat, ESS) on the merged chains, logged as pm.sample does.
    ``run_convergence_checks`` reads only the names of the model's free variables and deterministics,
    which the workers sent back (the model itself stays on the workers)."""
    from pymc.stats.convergence import log_warnings, run_convergence_checks

    model = SimpleNamespace(free_RVs=[SimpleNamespace(name=n) for n in names["free"]],
                            deterministics=[SimpleNamespace(name=n) for n in names["deterministics"]])
    log_warnings(run_convergence_checks(idata, model))


def _recorded_seed(random_seed) -> Any:
    """The seed as the result's ``random_seed`` attribute when it is an int or ints (storable in netCDF)."""
    def storable(s):  # netCDF attributes hold int64 at most
        return int(s) if -(2**63) <= int(s) < 2**63 else str(int(s))

    if isinstance(random_seed, int | np.integer) and not isinstance(random_seed, bool):
        return storable(random_seed)
    if (isinstance(random_seed, Sequence) and not isinstance(random_seed, str | bytes) and random_seed
            and all(isinstance(s, int | np.integer) for s in random_seed)):
        seeds = [storable(s) for s in random_seed]
        return seeds if all(isinstance(s, int) for s in seeds) else [str(s) for s in seeds]
    return None


def sample(model_factory: Callable[[], Any], *, chains: int, client: Client | None = None,
           random_seed: Any = None, **pm_sample_kwargs: Any) -> xr.DataTree:
    """Sample ``chains`` chains of a PyMC model on a dask cluster, one chain per task.

    Each task calls ``model_factory()`` on a worker and runs ``pm.sample(chains=1, cores=1, ...)`` inside
    ``with model:``; chain i gets exactly the seed ``pm.sample(chains=chains, random_seed=random_seed)``
    gives its chain i, so both give the same draws. The chains come back as one InferenceData.

    Parameters
    ----------
    model_factory : callable
        Called with no arguments on each worker, returns the ``pm.Model``. It is pickled with cloudpickle:
        a function defined in a script or notebook travels with its closure; one imported from your own
        module needs that module on the workers.
    chains : int
        Number of chains (tasks).
    client : dask.distributed.Client, optional
        The cluster to run on. None: start :func:`local_cluster` with ``min(chains, cores available)``
        workers and close it afterwards.
    random_seed : int, sequence of int, numpy Generator, optional
        As in ``pm.sample``. None draws a fresh int seed, stored as the result's ``random_seed``
        attribute (so is an int or ints given here) to reproduce the run.
    **pm_sample_kwargs
        Passed to each chain's ``pm.sample`` (``draws``, ``tune``, ``var_names``, ``idata_kwargs``, step
        options, ...), except: ``step`` must be a callable ``step(model)`` returning the step method(s)
        (it runs on the worker, inside ``with model:``); ``initvals`` may be one dict or one per chain;
        ``quiet`` defaults to True and ``progressbar`` to False in the tasks (their output goes to the
        workers' logs); a ``callback`` runs on the worker, where :func:`current_chain` gives its chain.
        Refused: ``cores``, ``mp_ctx``, ``model``, ``trace``, ``return_inferencedata=False``, external
        ``nuts_sampler``. ``compute_convergence_checks`` (default True) runs once, here, on the merged
        chains.

    Returns
    -------
    xarray.DataTree
        Every group the one-chain runs produce, chains concatenated along ``chain``. ``sampling_time`` is
        the wall time from the first task sent to the last chain back; ``chain_sampling_time`` each
        chain's own ``pm.sample`` time.

    Raises
    ------
    ChainsFailed
        When some chains failed (their task raised, or their worker died); it carries the finished chains
        as ``.idata`` and the causes as ``.failures``.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_treesamplers as pmt
    >>> def build_model():
    ...     rng = np.random.default_rng(0)
    ...     X = rng.normal(size=(200, 5))
    ...     y = np.sin(X[:, 0]) + rng.normal(scale=0.3, size=200)
    ...     with pm.Model() as model:
    ...         mu = pmt.BART("mu", X, y, m=50)
    ...         sigma = pm.HalfNormal("sigma", 1.0)
    ...         pm.Normal("y", mu, sigma, observed=y)
    ...     return model
    >>> idata = pmt.distributed.sample(build_model, chains=4, random_seed=1)  # doctest: +SKIP
    >>> # same draws as: with build_model(): pm.sample(chains=4, random_seed=1)
    """
    _check_arguments(model_factory, chains, pm_sample_kwargs)
    chains = int(chains)
    if random_seed is None:
        random_seed = secrets.randbits(63)
    seeds = ChainSeed.for_chains(random_seed, chains)  # checks the seed before anything starts
    distributed = _require_dask()
    if client is not None and not isinstance(client, distributed.Client):
        raise TypeError(f"client must be a dask.distributed.Client, got {type(client).__name__}")

    checks = pm_sample_kwargs.pop("compute_convergence_checks", True)
    initvals = pm_sample_kwargs.pop("initvals", None)
    per_chain = isinstance(initvals, Sequence) and not isinstance(initvals, str | bytes)
    base = {"quiet": True, "progressbar": False, **pm_sample_kwargs, "compute_convergence_checks": False}

    def task_kwargs(i: int) -> dict:
        return {**base, "initvals": initvals[i] if per_chain else initvals}

    own = client is None
    cluster = None
    if own:
        cluster = local_cluster(min(chains, _cpu_count()))
        client = distributed.Client(cluster)
    results: dict[int, dict] = {}
    failures: dict[int, BaseException] = {}
    token = uuid.uuid4().hex[:8]
    running: dict = {}
    try:
        t0 = time.time()
        results, failures = _run(distributed, client, model_factory, seeds, task_kwargs, token, running)
        wall = time.time() - t0
    finally:
        for fut in running:
            fut.cancel()
        if own:
            client.close()
            cluster.close()

    idata = None
    if results:
        first = next(iter(results.values()))
        times = [float(results[c]["groups"]["posterior"].attrs.get("sampling_time", np.nan))
                 for c in sorted(results) if "posterior" in results[c]["groups"]]
        extra = {"sampling_time": wall, "chain_sampling_time": times,
                 "created_at": datetime.now(UTC).isoformat(), "sampled_on": "dask.distributed"}
        recorded = _recorded_seed(random_seed)
        if recorded is not None:
            extra["random_seed"] = recorded
        if failures:
            extra["failed_chains"] = sorted(failures)
        idata = _merge(results, extra)
        _log.info("pymc_treesamplers.distributed: %d of %d chains in %.0f s", len(results), chains, wall)
        if checks and not failures:
            _convergence_checks(idata, first)
    if failures:
        err = ChainsFailed(failures, idata, chains)
        raise err from next(iter(err.failures.values()))
    return idata


def _run(distributed, client, model_factory, seeds: list[ChainSeed], task_kwargs, token: str,
         running: dict) -> tuple[dict[int, dict], dict[int, BaseException]]:
    """Run the chains, handing the scheduler at most one chain per worker thread at a time.

    dask sends every task it has to the workers at once (a worker with one thread queues the rest); when
    a worker dies, the scheduler blames every task it held, running or queued. Sending chains only as
    threads free up keeps each chain on a worker that runs it, so a death costs only that chain. With no
    workers yet (an adaptive cluster starting from zero) all chains are sent, so the cluster sees the work.
    """
    pending = deque(seeds)
    results: dict[int, dict] = {}
    failures: dict[int, BaseException] = {}
    done = distributed.as_completed()

    def window() -> int:
        threads = sum(client.nthreads().values())
        return threads if threads > 0 else len(seeds)

    def submit(seed: ChainSeed) -> None:
        fut = client.submit(_run_chain, model_factory, seed, task_kwargs(seed.chain), pure=False, retries=0,
                            key=f"pmt-chain-{seed.chain}-{token}")
        running[fut] = seed.chain
        done.add(fut)

    for _ in range(min(window(), len(pending))):
        submit(pending.popleft())
    for fut in done:
        chain = running.pop(fut)
        if fut.status == "finished":
            try:
                results[chain] = fut.result()
            except Exception as err:  # the result was lost before it arrived (e.g. its worker died)
                failures[chain] = err
        elif fut.status == "cancelled":
            failures[chain] = distributed.client.FutureCancelledError(fut.key, "cancelled")
        else:
            err = fut.exception()
            tb = fut.traceback()
            failures[chain] = err.with_traceback(tb) if tb is not None else err
        fut.release()
        while pending and len(running) < window():
            submit(pending.popleft())
    return results, failures
