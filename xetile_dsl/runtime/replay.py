"""A remembered device-array launch, re-enqueued by one call with the fewest steps.

A kernel launched again and again with the same device arrays (and the same or new
scalar values) spends, besides the runtime's submit, only what :meth:`Replay.__call__`
does: one identity test per array, one dictionary read per scalar (the value's native
argument, kept per parameter), the submit through the queue's order
(runtime/queue_order.py) and the in-flight record.  Everything that does not depend on
the arguments -- the native argument list, the scalar slots, the ranges, the queue, its
order-manager lookup -- is made once, when the launch is remembered.

Measured on this project's CPU device (docs/decisions/020-launch-path.md): the Python
work of a launch costs about twice as much next to the runtime's submit as in a tight
loop (the submit evicts it from the caches), so what counts is how little code and data
a launch touches, not only how few operations it makes.

A replay holds no caller's array: the arrays are weak references (when one dies every
owner's callback in :attr:`Replay.on_death` forgets the replay), and the native arguments
hold device memory only (runtime/memo.py).  One replay serves a loaded kernel's direct
launches (loaded_kernel.py ``LoadedKernel.launch``) and the ``@jit`` function's remembered
call alike.
"""
from __future__ import annotations

from . import queue_order
from .dpctl_submit import CSubmit
from .memo import arg_tokens

#: what :meth:`Replay.__call__` returns when the arguments are not the remembered
#: launch's arrays, or a scalar selects another specialisation: go the full way
MISS = object()


#: the most native values a scalar parameter remembers (NaNs and many distinct values)
_MAX_VALUES = 1024


class Replay:
    """One remembered launch of device arrays; ``replay(args)`` enqueues it again with
    ``args``' scalar values and returns the event, or :data:`MISS`.

    Its owners (a :class:`~.loaded_kernel.LoadedKernel`, the ``@jit`` function that launched
    it) each register a callback in :attr:`on_death`: all are called when one of the
    arrays dies, so that every owner forgets the replay (and with it the device memory
    its native arguments hold)."""

    __slots__ = ("tokens", "nargs", "arrays", "scalars", "native", "kernel", "gsize", "lsize", "queue",
                 "backend", "launch_id", "on_death", "_inflight", "_managers", "_order_class", "c_submit")

    def __init__(self, loaded, prepared, args, inflight, fits, on_death=None):
        """``loaded`` launched ``prepared`` with ``args``; ``inflight`` is inflight.py's
        record of launches that may still run: ``(track, table, lock, prune_at)``, where
        ``track(backend, queue, event, keep, launch_id)`` records one and
        ``table[id(queue)]`` is ``(backend, queue, {launch id: (event, kept arrays)}, the
        queue orders its launches)``; ``fits(value, remembered)`` tells whether a new
        scalar value selects the remembered value's specialisation; ``on_death(ref)``, if
        given, is the first callback of :attr:`on_death`.  ``tokens`` is None (nothing to
        replay) when an argument cannot be identified cheaply (runtime/memo.py)."""
        self.on_death = [on_death] if on_death is not None else []
        self.tokens = arg_tokens(args, _calling(self.on_death))
        self.nargs = len(args)
        self.native = list(prepared.native_args)
        self.arrays = tuple((pos, tok[1], tok[2] if len(tok) == 3 else None)
                            for pos, tok in enumerate(self.tokens or ()) if tok[0] is None)
        # (position, weak reference to the remembered array, a pyopencl array's memory state
        # or None), checked one by one in __call__
        self.scalars = tuple(_ScalarSlot(handler, slot, args[handler.position], fits)
                             for handler, slot in loaded._scalar_slots)
        self.kernel, self.gsize, self.lsize = loaded.native_kernel, prepared.global_size, prepared.local_size
        self.backend, self.queue = loaded.backend, prepared.queue
        self.launch_id, self._inflight = prepared.track_id, inflight
        # dpctl's order managers (its per-context dictionary: queue -> manager) and our state
        # class there (runtime/queue_order.py); a queue without a manager in this context
        # yet, or whose state is not ours, goes through the backend's submit, which makes it
        order_class = getattr(self.backend, "_launch_order", None)
        self._managers = queue_order.managers_of(self.backend._order) if order_class is not None else None
        self._order_class = order_class
        # the same submit through dpctl's C interface, its arguments marshalled once
        # (runtime/dpctl_submit.py); None: dpctl's Python ``submit_async``
        self.c_submit = None if self._managers is None else CSubmit.make(
            self.kernel, self.queue, self.native, self.gsize, self.lsize, tuple(s.slot for s in self.scalars))

    def __call__(self, args):
        if len(args) != self.nargs:
            return MISS
        for pos, ref, state in self.arrays:
            value, array = args[pos], ref()
            if value is not array:
                if array is None:
                    return MISS                 # (the owner forgets the replay meanwhile)
                # a dpnp array's usm_ndarray is its ``_array_obj``: an attribute read
                try:
                    same = value._array_obj is array
                except AttributeError:
                    same = False
                if not same:
                    get_array = getattr(value, "get_array", None)
                    if get_array is None or get_array() is not array:
                        return MISS
            elif state is not None and (value.base_data, value.offset, value.shape, value.strides,
                                        value.queue) != state:
                return MISS                     # a pyopencl array given other memory
        native = self.native
        for scalar in self.scalars:
            value = args[scalar.position]
            if value.__class__ is not scalar.cls:
                return MISS
            arg = scalar.known.get(value)
            if arg is None:
                arg = scalar.add(value)
                if arg is None:
                    return MISS                 # another specialisation of the kernel
            if arg is not native[scalar.slot]:
                if native is self.native:
                    native = native[:]          # this call's own list: other threads read self.native
                native[scalar.slot] = arg
        if native is not self.native:
            self.native = native
        # enqueue after the queue's earlier work (dpctl: through its order manager; while
        # nobody else added work since our previous launch, after that launch alone --
        # queue_order.submit, spelled out here for the common case: one frame less)
        queue = self.queue
        managers = self._managers
        if managers is not None:
            manager = managers.get().get(queue)
            state = manager._state if manager is not None else None
            if state.__class__ is self._order_class:
                # (acquire/release: a ``with`` block's method lookups cost twice as much)
                lock = state.lock
                lock.acquire()
                try:
                    if state.changes == state.seen:
                        c_submit = self.c_submit
                        event = None if c_submit is None else c_submit(native, state.after)
                        if event is None:
                            event = queue.submit_async(self.kernel, native, self.gsize, self.lsize, state.after)
                        state.after = [event]
                    else:
                        event = None
                finally:
                    lock.release()
                if event is None:
                    event = queue_order.submit(queue, manager, state, self.kernel, native, self.gsize, self.lsize)
            else:
                event = self.backend.submit_async(self.kernel, native, self.gsize, self.lsize, queue)
        else:
            event = self.backend.submit_async(self.kernel, native, self.gsize, self.lsize, queue)
        # keep ``args`` until the launch is done: on a queue that orders its launches the
        # newest event of this launch replaces the one before (as inflight.track does)
        track, table, lock, prune_at = self._inflight
        lock.acquire()
        try:
            entry = table.get(id(queue))
            recorded = entry is not None and entry[3] and len(entry[2]) < prune_at
            if recorded:
                entry[2][self.launch_id] = (event, args)
        finally:
            lock.release()
        if not recorded:
            track(self.backend, queue, event, args, self.launch_id)
        return event


def _calling(callbacks: list):
    """A weak-reference callback calling each of ``callbacks`` (a list its owner may
    extend) with the dead reference; it holds the list, not the replay."""
    def died(ref) -> None:
        for callback in tuple(callbacks):
            callback(ref)

    return died


class _ScalarSlot:
    """One scalar parameter of a replay: its argument position, its slot among the native
    arguments, the remembered value's class, and ``known``: value -> native argument for
    every value seen that selects the remembered specialisation (checked and converted
    once; float zeros are never kept: ``0.0 == -0.0`` but they are other arguments)."""

    __slots__ = ("position", "slot", "cls", "known", "handler", "remembered", "fits")

    def __init__(self, handler, slot: int, value, fits) -> None:
        self.position, self.slot, self.cls = handler.position, slot, value.__class__
        self.handler, self.remembered, self.fits = handler, value, fits
        self.known: dict = {}

    def add(self, value):
        """The native argument of a new ``value`` (checked: LaunchError naming the
        parameter), or None when it selects another specialisation."""
        if not self.fits(value, self.remembered):
            return None
        arg = self.handler.convert(value)
        if value == value and (value or self.cls is not float):   # not NaN, not a float zero
            if len(self.known) >= _MAX_VALUES:
                self.known.clear()
            self.known[value] = arg
        return arg
