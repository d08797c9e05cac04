"""The likelihood graph lowered to native code the sweep calls without Python: the graph route's fast path.

:func:`lower` takes the compiled graph of :class:`~pymc_treesamplers.routes.gaussian.GaussianWorkingModel`
(the observed log-likelihood in the BART value, its gradient and the Hessian's diagonal) and returns a
:class:`NativeGraph`, or the reason it cannot (then the graph route evaluates the graph in Python, through
numba's ``objmode``). Three steps:

* every shared variable of the graph (the other model variables PyMC sets before each step, ``pm.Data``, the
  other outputs of a BART with several) becomes a slice of one float64 vector ``theta``, so the lowered
  functions have one signature for every model: ``(f, theta)``;
* PyTensor's numba backend compiles the log-likelihood alone, and the gradient with the curvature, each from
  that graph (PyTensor caches them on disk by the graph's hash);
* the driver's compiled code calls each compiled function directly, at the address of its native code, by
  numba's own calling convention (:func:`graph_loglik`, :func:`graph_derivs`): the record carries integers, so
  the sweep is compiled once for every model, as the families' sweeps are, and an exception the graph raises
  (a parameter out of its support) reaches the user with its own message.

A graph that PyTensor's numba backend runs in object mode (an op it has no numba code for) is not lowered: its
ops would take the GIL back inside the sweep.

>>> import numpy as np, pytensor.tensor as pt
>>> f = pt.vector("f")
>>> ll = -0.5 * pt.sum((f - 1.0) ** 2)
>>> g = pt.grad(ll, f)
>>> native = lower([f], [ll, g, -pt.grad(pt.sum(g), f)], "f")
>>> float(graph_loglik(native.fns, np.zeros(3), native.theta()))
-1.5
"""

from __future__ import annotations

import inspect
import warnings

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
from numba import types
from numba.extending import intrinsic
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, equal_computations
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import graph_inputs

# what the intrinsics declare the compiled functions return: PyTensor's outputs as new arrays of any layout
# (an array's data model is the same for every layout, so a C-contiguous result is read correctly as "A")
_ARRAY_1D = types.Array(types.float64, 1, "C")
_LOGLIK_RESULT = types.Tuple((types.Array(types.float64, 0, "A"),))
_DERIVS_RESULT = types.UniTuple(types.Array(types.float64, 1, "A"), 2)
# PyTensor's numba function of a graph takes its inputs as one tuple (a ``*args`` function) or one by one
_INPUTS = types.UniTuple(_ARRAY_1D, 2)


class NativeGraph:
    """A likelihood graph lowered to native code (module docstring): ``fns``, how the sweep calls its compiled
    functions (the log-likelihood's address and calling form, then the derivatives', address 0 when only the
    log-likelihood could be lowered: ``derivs_reason`` says why); :meth:`theta` packs the shared inputs'
    current values."""

    def __init__(self, shared: list, shapes: list, fns: list[int], keep: tuple, derivs_reason: str | None = None):
        self.shared, self.shapes = shared, shapes
        self.fns = np.array(fns, dtype=np.int64)
        self.derivs_reason = derivs_reason
        # the compiled functions own the code the addresses point into
        self._keep = keep

    def theta(self) -> np.ndarray:
        """The shared inputs' current values, packed as the lowered functions read them."""
        parts = []
        for var, shape in zip(self.shared, self.shapes, strict=True):
            value = np.asarray(var.get_value())
            if value.shape != shape:
                raise ValueError(f"the shared value {var.name!r} changed shape from {shape} to {value.shape} after "
                                 "the BART step was built; build the step again (pm.sample does)")
            parts.append(value.astype(np.float64).ravel())
        return np.concatenate(parts) if parts else np.zeros(0)


def lower(inputs: list, outputs: list, name) -> NativeGraph | str:
    """The graph ``outputs = [loglik, grad, curvature]`` of the single input ``inputs[0]`` (the BART value)
    lowered to native code, or a string saying why its log-likelihood cannot be (the caller keeps the Python
    route); the derivatives alone may stay in Python (:attr:`NativeGraph.derivs_reason`). ``name``: the
    likelihood's, for those strings."""
    shared = [v for v in graph_inputs(outputs) if isinstance(v, SharedVariable)]
    free = [v for v in graph_inputs(outputs) if not isinstance(v, SharedVariable | Constant) and v is not inputs[0]]
    if free:
        return f"the likelihood graph has inputs that are neither shared nor constant: {free}"
    if inputs[0].dtype != "float64":
        return f"the BART value is {inputs[0].dtype}, not float64"
    theta = pt.vector("theta", dtype="float64")
    replace, shapes, offset = {}, [], 0
    for var in shared:
        value = np.asarray(var.get_value())
        if value.dtype.kind not in "biuf":
            return f"the shared input {var.name!r} of the likelihood graph is not numeric ({value.dtype})"
        size = int(value.size)
        piece = theta[offset:offset + size].reshape(value.shape).astype(var.dtype)
        replace[var] = pt.specify_shape(piece, value.shape) if value.ndim else piece
        shapes.append(value.shape)
        offset += size
    lowered = graph_replace(outputs, replace, strict=False)
    for (f_seen, theta_seen, outs_seen), (fns, keep, derivs_reason) in _LOWERED:
        # pm.sample builds its steps again at every call, with new shared variables but the same graph
        if equal_computations(lowered, outs_seen, in_xs=[inputs[0], theta], in_ys=[f_seen, theta_seen]):
            return NativeGraph(shared, shapes, fns, keep, derivs_reason)
    native = _lowered(inputs, theta, lowered, shared, shapes, name)
    if isinstance(native, NativeGraph):
        _LOWERED.append(((inputs[0], theta, lowered), (native.fns.tolist(), native._keep, native.derivs_reason)))
        del _LOWERED[:-_LOWERED_KEPT]
    return native


# the graphs lowered in this process (the latest few), with how to call their compiled code
_LOWERED: list = []
_LOWERED_KEPT = 16


def _lowered(inputs, theta, lowered, shared, shapes, name) -> NativeGraph | str:
    loglik = _compiled([inputs[0], theta], lowered[0], _LOGLIK_RESULT, f"the likelihood of {name}")
    if isinstance(loglik, str):
        return loglik
    derivs = _compiled([inputs[0], theta], lowered[1:], _DERIVS_RESULT, f"the derivatives of the likelihood of {name}")
    if isinstance(derivs, str):
        return NativeGraph(shared, shapes, [*loglik[1], 0, 0], (loglik[0],), derivs)
    return NativeGraph(shared, shapes, [*loglik[1], *derivs[1]], (loglik[0], derivs[0]))


def _compiled(inputs, outputs, result, what: str):
    """``(function, (address, spread))``: PyTensor's numba function of ``outputs`` and how to call it
    (:func:`_call_form`), or why ``what`` cannot be lowered."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn = pytensor.function(inputs, outputs, mode="NUMBA", on_unused_input="ignore")
            call = _call_form(fn, result)
        except Exception as err:  # noqa: BLE001 - any failure keeps the Python route, which says why
            return f"PyTensor's numba backend could not compile {what}: {err!r}"[:400]
    slow = [str(w.message) for w in caught if "object mode" in str(w.message)]
    if slow:
        return f"PyTensor's numba backend runs part of {what} in object mode: {slow[0][:200]}"
    return call if isinstance(call, str) else (fn, call)


def _call_form(fn, result) -> tuple[int, int] | str:
    """``(address, spread)`` of the native code of PyTensor's compiled function ``fn`` for two float64 vectors
    (``spread``: it takes them one by one, not as one tuple), or why it cannot be called as ``result``
    declares."""
    jitted = fn.vm.jit_fn
    spread = not any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(jitted.py_func).parameters.values())
    args = (_ARRAY_1D, _ARRAY_1D) if spread else (_INPUTS,)
    jitted.compile(args)
    cres = jitted.overloads.get(args)
    if cres is None:
        return f"PyTensor's numba function takes {list(jitted.overloads)}, not {args}"
    got = cres.signature.return_type
    if not (isinstance(got, types.BaseTuple) and len(got) == len(result)
            and all(isinstance(a, types.Array) and a.dtype == b.dtype and a.ndim == b.ndim
                    for a, b in zip(got, result, strict=True))):
        return f"PyTensor's numba function returns {got}, not {result}"
    return int(cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)), int(spread)


def _caller(result, spread: bool):
    """An intrinsic that calls a compiled function of the lowered graph at its address on ``(f, theta)`` (one
    by one if ``spread``, else as one tuple), by numba's calling convention, returning its outputs and
    propagating an exception it raises."""

    @intrinsic
    def call(typingctx, address, f, theta):
        if not (isinstance(address, types.Integer) and f == _ARRAY_1D and theta == _ARRAY_1D):
            return None
        sig = result(address, f, theta)

        def codegen(context, builder, signature, args):
            if spread:
                argtys, values = [_ARRAY_1D, _ARRAY_1D], [args[1], args[2]]
            else:
                argtys, values = [_INPUTS], [context.make_tuple(builder, _INPUTS, [args[1], args[2]])]
            fnty = context.call_conv.get_function_type(result, argtys)
            fn = builder.inttoptr(args[0], fnty.as_pointer())
            status, out = context.call_conv.call_function(builder, fn, result, argtys, values)
            with builder.if_then(status.is_error, likely=False):
                context.call_conv.return_status_propagate(builder, status)
            return out

        return sig, codegen

    return call


_loglik_tuple, _loglik_spread = _caller(_LOGLIK_RESULT, False), _caller(_LOGLIK_RESULT, True)
_derivs_tuple, _derivs_spread = _caller(_DERIVS_RESULT, False), _caller(_DERIVS_RESULT, True)


@numba.njit(cache=True, nogil=True)
def graph_loglik(fns, f, theta):
    """The lowered log-likelihood (:attr:`NativeGraph.fns`) at the BART value ``f``."""
    if fns[1]:
        (value,) = _loglik_spread(fns[0], f, theta)
    else:
        (value,) = _loglik_tuple(fns[0], f, theta)
    return value[()]


@numba.njit(cache=True, nogil=True)
def graph_derivs(fns, f, theta, grad, curv):
    """The lowered gradient and working curvature (:func:`working_curvature`) (:attr:`NativeGraph.fns`) at the
    BART value ``f``, into ``grad`` and ``curv``."""
    if fns[3]:
        g, h = _derivs_spread(fns[2], f, theta)
    else:
        g, h = _derivs_tuple(fns[2], f, theta)
    for i in range(f.shape[0]):
        grad[i] = g[i]
        curv[i] = h[i]
    working_curvature(curv)


@numba.njit(cache=True, nogil=True)
def working_curvature(curv):
    """The observed curvature where positive; elsewhere the median positive curvature over the rows (0 if
    there is none): a safe weight that the Metropolis-Hastings correction makes exact. In place."""
    k = 0
    for i in range(curv.shape[0]):
        if curv[i] > 0.0:
            k += 1
    if k == curv.shape[0]:
        return
    fill = 0.0
    if k > 0:
        positive = np.empty(k)
        k = 0
        for i in range(curv.shape[0]):
            if curv[i] > 0.0:
                positive[k] = curv[i]
                k += 1
        fill = np.median(positive)
    for i in range(curv.shape[0]):
        if not curv[i] > 0.0:
            curv[i] = fill
