"""A remembered dpctl launch submitted through dpctl's C interface, its arguments marshalled once.

``SyclQueue.submit_async`` checks the type of every argument on every call (an
``isinstance`` chain over ctypes types per argument: about two thirds of a bare submit's
instructions for a 13-argument kernel, docs/decisions/020-launch-path.md) and then calls
the C function ``DPCTLQueue_SubmitNDRange`` of dpctl's ``libDPCTLSyclInterface``
(dpctl's public C interface, the one numba-dpex's generated code calls).  A
:class:`CSubmit` calls that function itself with the argument array, the argument-type
array and the ranges built once per remembered launch (runtime/replay.py); per launch it
only rewrites the scalar slots that changed and the dependency, and wraps the returned
event as a ``dpctl.SyclEvent``.

Safety: the path is used only with a dpctl version whose C signature, argument-type enum
and event-capsule ownership were checked (:data:`VERIFIED_DPCTL`), when the library and
every symbol load, and for argument kinds whose C form is known (USM memory objects:
the pointer; ctypes integers and floats: a pointer to the value); anything else, or
``XETILE_DPCTL_C_SUBMIT=0``, keeps ``submit_async``.  A submit the C function refuses
(it returns no event and enqueues nothing) is repeated through ``submit_async``, which
raises dpctl's own error.

The calls keep the GIL (``ctypes.PyDLL``), as ``submit_async`` does: no other Python
thread runs during a submit, as before.

Event ownership: the returned event reference is ours; ``SyclEvent(capsule)`` (capsule
named ``"SyclEventRef"``) copies it and renames the capsule, so the reference is deleted
right after the wrap: each launch's event is freed once, by its ``SyclEvent``.
"""
from __future__ import annotations

import ctypes
import os
import threading

from .. import knobs

_active_count = threading.active_count

#: dpctl versions (major.minor) whose C submit, enum values and capsule rules were checked
VERIFIED_DPCTL = ("0.22",)

#: set to ``0`` to submit every launch through dpctl's Python ``submit_async``
ENV_SWITCH = knobs.DPCTL_C_SUBMIT.name

#: ctypes scalar class -> name of its ``dpctl._sycl_queue.kernel_arg_type`` member
_SCALAR_KINDS = {
    ctypes.c_int8: "dpctl_int8", ctypes.c_uint8: "dpctl_uint8",
    ctypes.c_int16: "dpctl_int16", ctypes.c_uint16: "dpctl_uint16",
    ctypes.c_int32: "dpctl_int32", ctypes.c_uint32: "dpctl_uint32",
    ctypes.c_int64: "dpctl_int64", ctypes.c_uint64: "dpctl_uint64",
    ctypes.c_float: "dpctl_float32", ctypes.c_double: "dpctl_float64",
}

_UNLOADED = object()
_api = _UNLOADED


class _CApi:
    """The C functions and Python types one C submit needs, loaded once."""

    def __init__(self, lib, kinds: dict, void_ptr: int, event_type, memory_type) -> None:
        self.submit = lib.DPCTLQueue_SubmitNDRange
        self.submit.restype = ctypes.c_void_p
        self.submit.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        self.delete_event = lib.DPCTLEvent_Delete
        self.delete_event.restype = None
        self.delete_event.argtypes = [ctypes.c_void_p]
        # a prototype of our own: setting ``ctypes.pythonapi.PyCapsule_New``'s types would
        # change them for every other user of that shared function object
        self.capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
            ("PyCapsule_New", ctypes.pythonapi))
        self.kinds, self.void_ptr = kinds, void_ptr
        self.event_type, self.memory_type = event_type, memory_type


def api() -> _CApi | None:
    """dpctl's C submit, or None when it cannot be used safely here (dpctl missing or of an
    unverified version, the library or a symbol missing, the enum not as checked)."""
    global _api
    if _api is _UNLOADED:
        try:
            _api = _load()
        except (ImportError, OSError, AttributeError, TypeError, ValueError):
            _api = None
    return _api


def _load() -> _CApi | None:
    import dpctl                      # optional dependency
    import dpctl._sycl_queue as sycl_queue
    from dpctl.memory._memory import _Memory

    if ".".join(dpctl.__version__.split(".")[:2]) not in VERIFIED_DPCTL:
        return None
    enum = sycl_queue.kernel_arg_type
    kinds = {cls: int(getattr(enum, name).value) for cls, name in _SCALAR_KINDS.items()}
    # PyDLL: the calls keep the GIL, as dpctl's own submit does (a CDLL call releases it, and
    # threads then submitted concurrently with dpnp's work: a crash in test_threads)
    lib = ctypes.PyDLL(os.path.join(os.path.dirname(dpctl.__file__), "libDPCTLSyclInterface.so"))
    return _CApi(lib, kinds, int(enum.dpctl_void_ptr.value), dpctl.SyclEvent, _Memory)


def enabled() -> bool:
    """False when ``XETILE_DPCTL_C_SUBMIT=0`` asks for dpctl's Python submit."""
    return knobs.DPCTL_C_SUBMIT.get()


class CSubmit:
    """One remembered launch's C submit: the argument, type and range arrays built once.

    Only while the process has one thread: with several, ``tests/reliability/
    test_threads.py`` (threads launching and running dpnp work on one queue) crashed in
    about 1 of 15 runs under load with the C submit (GIL kept or not) and not in as many
    runs without it; the cause is not known, so threads go through ``submit_async``.
    :meth:`__call__` runs under the lock of the queue's order (runtime/queue_order.py)
    and takes its own lock without waiting (a thread started meanwhile finding it taken
    goes through ``submit_async``): no thread rewrites a slot or the dependency while
    another submits them."""

    __slots__ = ("_api", "_kernel_ref", "_queue_ref", "_args", "_types", "_nargs", "_global", "_local", "_ndims",
                 "_deps", "_scalar_slots", "_written", "_lock", "launches")

    def __init__(self, capi: _CApi, kernel, queue, native: list, gsize, lsize, scalar_slots: tuple) -> None:
        n, dims = len(native), len(gsize)
        self._api = capi
        self._kernel_ref, self._queue_ref = kernel.addressof_ref(), queue.addressof_ref()
        self._args = (ctypes.c_void_p * n)()
        self._types = (ctypes.c_int * n)()
        for i, arg in enumerate(native):
            if isinstance(arg, capi.memory_type):
                self._args[i], self._types[i] = arg._pointer, capi.void_ptr
            else:
                self._args[i], self._types[i] = ctypes.addressof(arg), capi.kinds[arg.__class__]
        self._nargs, self._ndims = n, dims
        self._global = (ctypes.c_size_t * 3)(*gsize)
        self._local = (ctypes.c_size_t * 3)(*lsize)
        self._deps = (ctypes.c_void_p * 1)()
        self._scalar_slots = scalar_slots
        self._written = native            # the native list the scalar slots point into
        self._lock = threading.Lock()
        self.launches = 0                 # launches submitted here (tests read it)

    @classmethod
    def make(cls, kernel, queue, native: list, gsize, lsize, scalar_slots: tuple) -> CSubmit | None:
        """The C submit of a launch, or None when it must go through ``submit_async``:
        the path is off or unavailable, or an argument is of a kind not checked here."""
        capi = api() if enabled() else None
        if capi is None:
            return None
        try:
            if not 1 <= len(gsize) == len(lsize) <= 3:
                return None
            for arg in native:
                if not (isinstance(arg, capi.memory_type) or arg.__class__ in capi.kinds):
                    return None
            if any(native[slot].__class__ not in capi.kinds for slot in scalar_slots):
                return None
            return cls(capi, kernel, queue, native, gsize, lsize, scalar_slots)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError, OverflowError):
            return None

    def __call__(self, native: list, after: list):
        """Enqueue with ``native``'s scalar values after the events of ``after`` (at most
        one); the event, or None when the C submit did not enqueue (the caller submits
        through dpctl's Python path then)."""
        if _active_count() != 1:
            return None                   # threads: dpctl's submit (see the class doc)
        lock = self._lock
        if not lock.acquire(False):
            return None
        try:
            if native is not self._written:
                slots = self._args
                for slot in self._scalar_slots:
                    slots[slot] = ctypes.addressof(native[slot])   # (a slot's ctypes class never changes)
                self._written = native
            ndeps = len(after)
            if ndeps:
                if ndeps > 1:
                    return None
                self._deps[0] = after[0].addressof_ref()
            capi = self._api
            ref = capi.submit(self._kernel_ref, self._queue_ref, self._args, self._types, self._nargs,
                              self._global, self._local, self._ndims, self._deps, ndeps)
            if not ref:
                return None
            try:
                event = capi.event_type(capi.capsule(ref, b"SyclEventRef", None))
            finally:
                capi.delete_event(ref)
            self.launches += 1
            return event
        finally:
            lock.release()
