"""A kernel built for one device context, and launching it: :class:`LoadedKernel`.

The interface with the compiler is: SPIR-V bytes + :class:`~.abi.KernelABI` + a grid
(launchers.py builds the program and returns a :class:`LoadedKernel`).
``kernel(grid, args)`` validates every argument against the ABI *before* anything reaches
the device (arguments.py; :class:`LaunchError` names the parameter and what was expected),
copies numpy arrays into device buffers whose row pitch is padded to
``abi.pitch_align_bytes``, launches on the grid (grids.py), waits, and copies arrays whose
``ArrayParam.written`` is true back into the caller's arrays.  A launch with device
arrays only is enqueued without waiting (inflight.py keeps its arrays alive).

For benchmarks, ``kernel.prepare(grid, args)`` returns a :class:`PreparedLaunch` whose
``submit()`` is the bare device submit (no validation, no copies) and whose
``finish()`` copies results back; ``native_kernel``, ``queue``, ``native_args``,
``global_size``/``local_size`` (in the backend's own order) allow timing a raw
``queue.submit`` of the same program and arguments.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .abi import KernelABI
from .arguments import ArrayHandler, ScalarHandler, arg_dtypes, argument_handlers, scalar_slots
from .arrays import DeviceArray, queue_label, same_queue, type_name
from .grids import check_global_range, normalize_grid
from .inflight import INFLIGHT, INFLIGHT_LOCK, LAUNCH_IDS, PRUNE_AT, track
from .memo import forgetter
from .replay import MISS, Replay
from ..errors import BuildError, LaunchError


@dataclass
class PreparedLaunch:
    """Arguments already on the device: ``submit()`` is the bare launch."""

    kernel: "LoadedKernel"
    native_args: list
    global_size: tuple
    local_size: tuple
    copy_back: list          # (device buffer, staged host array, caller's array)
    queue: object = None     # the device arrays' queue; None: the kernel's own queue
    keep: tuple = ()         # the caller's device arrays, alive until the kernel is done
    copied_in: bool = False  # numpy arrays were copied to (reused) device buffers: launch synchronously
    #: what track files this launch's events under: unique per prepare() (an id() could be
    #: reused by a later launch of other arrays while this one runs), and kept by the
    #: remembered copy and by a launch remade with new scalar values (the same arrays), so
    #: repeated launches keep one entry
    track_id: int = 0

    def submit(self) -> None:
        """Launch and wait; no validation, no copies."""
        self.kernel.backend.submit(self.kernel.native_kernel, self.native_args, self.global_size,
                                   self.local_size, self.queue)

    def submit_async(self):
        """Launch without waiting; returns the runtime's event."""
        return self.kernel.backend.submit_async(self.kernel.native_kernel, self.native_args, self.global_size,
                                                self.local_size, self.queue)

    def finish(self) -> None:
        """Copy written arrays back into the caller's arrays (un-padding)."""
        _copy_back(self.kernel.backend, self.copy_back)


def _copy_back(backend, copy_back: list) -> None:
    """Read each (device buffer, staged host array, caller's array) back, un-padding."""
    for buf, staged, target in copy_back:
        backend.read(buf, staged)
        if staged is not target:
            target[...] = staged[..., : target.shape[-1]]


def _any_value(value, remembered) -> bool:
    """A loaded kernel's own scalar check: every value of the remembered type may be
    replayed (each new one is still checked and converted once)."""
    return True


class LoadedKernel:
    """A kernel built for one device context, callable as ``kernel(grid, args)``."""

    def __init__(self, backend, native_kernel, abi: KernelABI):
        self.backend, self.native_kernel, self.abi = backend, native_kernel, abi
        self.queue = getattr(backend, "queue", None)
        # scalars, extents and strides in the form the backend passes fastest
        self._native_int = backend.native_int
        self.handlers = argument_handlers(abi, backend.native_int, backend.native_scalar)
        self.num_native_args = sum(h.nargs for h in self.handlers)
        _check_arg_count(native_kernel, self)            # before the types are declared
        backend.typed(native_kernel, arg_dtypes(self.handlers))
        self._scalar_slots = scalar_slots(self.handlers)
        self.workgroup_size = int(abi.workgroup_size)
        # device buffers reused for numpy arrays, one pool per thread: a launch owns its
        # buffers from copy-in to copy-back, so threads launching at once must not share them
        self._local = threading.local()
        self._range_memo: dict = {}
        self._grids: dict = {}          # grid as given -> checked 3-tuple
        self._queue_in_context = None   # the last queue seen to be in this kernel's context
        # (grid as given, checked grid, argument tokens, Replay) of the last device-array launch
        self._memo = None
        self._forget = forgetter(self, "_memo", 2)
        #: whether a new scalar value may be replayed in place of the remembered one
        #: (``fits(value, remembered)``): any value of the same type here; a ``@jit``
        #: kernel's loaded kernels only values of the same specialisation (jit.py)
        self.scalar_fits = _any_value

    def __call__(self, grid, args):
        """Validate and launch; see :meth:`launch`."""
        return self.launch(grid, args)

    def launch(self, grid, args):
        """Validate every argument, then launch.

        With numpy arrays among the arguments: copy in, launch on the device arrays' queue
        (if any), wait, copy back (returns None).  With device arrays only: enqueue on their queue and return the event
        without waiting (:func:`synchronize` or the queue's ``wait()`` waits).

        Device buffers for numpy arrays are reused between calls of the same sizes within
        one thread (each thread has its own), so threads may launch the same kernel at once.

        A launch with the grid and device arrays of the last asynchronous one goes
        through that launch's :class:`~.replay.Replay` (as a repeated ``@jit`` call does).
        """
        memo = self._memo
        if memo is not None and self._same_grid(grid, memo) and (args.__class__ is tuple or args.__class__ is list):
            event = memo[3](args if args.__class__ is tuple else tuple(args))
            if event is not MISS:
                return event
        return self.launch_remembered(grid, args)[0]

    def launch_remembered(self, grid, args, described=None, on_death=None) -> tuple:
        """:meth:`launch`, also returning the :class:`~.replay.Replay` a call with the same
        grid and device arrays re-enqueues, or None (numpy arrays, or arguments that
        cannot be identified cheaply).

        The replay is returned rather than read back from ``self`` afterwards: another
        thread may have replaced the remembered one in between.  ``described`` is ``args``
        with device arrays already described (runtime/arrays.py), if known;
        ``on_death(ref)`` is registered with a new replay (its caller remembers it too)."""
        if args.__class__ is not tuple and isinstance(args, list):
            args = tuple(args)          # the in-flight record keeps it: not a list the caller may change
        memo = self._memo
        if memo is not None and args.__class__ is tuple and self._same_grid(grid, memo):
            replay = memo[3]
            event = replay(args)
            if event is not MISS:
                if on_death is not None and on_death not in replay.on_death:
                    replay.on_death.append(on_death)
                return event, replay
        if self._launch_planned(grid, args):
            return None, None
        launch = self.prepare(grid, args if described is None else described, reuse_buffers=True)
        if launch.copied_in or not launch.keep:
            launch.submit()
            launch.finish()
            return None, None
        event = self.launch_async(launch)
        # the replay keeps no caller array alive: its tokens are weak, its native arguments
        # device memory only, and every owner forgets it when an array dies
        replay = Replay(self, launch, args, (track, INFLIGHT, INFLIGHT_LOCK, PRUNE_AT), self.scalar_fits,
                        self._forget)
        if replay.tokens is None:
            self._memo = None
            return event, None
        if on_death is not None:
            replay.on_death.append(on_death)
        self._memo = (grid, self._grid(grid), replay.tokens, replay)
        return event, replay

    def _same_grid(self, grid, memo: tuple) -> bool:
        """True when ``grid`` is the grid of the remembered launch ``memo``: the same object,
        or a tuple naming the same grid (``(2,)`` and ``(2, 1, 1)``; a bad one raises here
        as the full launch would)."""
        return grid is memo[0] or (grid.__class__ is tuple and normalize_grid(grid) == memo[1])

    def launch_async(self, launch: PreparedLaunch, keep=None):
        """Enqueue a prepared device-array launch again (no checks); returns the event.
        ``keep`` (default: the launch's own arrays) stays alive until the kernel is done."""
        event = self.backend.submit_async(self.native_kernel, launch.native_args, launch.global_size,
                                          launch.local_size, launch.queue)
        track(self.backend, launch.queue, event, launch.keep if keep is None else keep,
               launch.track_id or id(launch))
        return event

    def check(self, grid, args) -> tuple[tuple[int, int, int], list]:
        """Validate grid and arguments without touching the device; returns (grid3, converted)."""
        grid3, converted, _ = self._checked(grid, args)
        return grid3, converted

    def _checked(self, grid, args) -> tuple:
        """:meth:`check`, plus each array's pack (:meth:`ArrayHandler.checked`; None for
        a scalar)."""
        grid3 = self._grid(grid)
        if args.__class__ is not list and not isinstance(args, (list, tuple)):
            raise LaunchError(f"args must be a list, got {type_name(args)}")
        if len(args) != len(self.handlers):
            names = ", ".join(h.param.name for h in self.handlers)
            raise LaunchError(f"kernel {self.abi.kernel_name!r} takes {len(self.handlers)} argument(s) "
                              f"({names}), got {len(args)}")
        converted, packs, first = [], [], None
        for h, value in zip(self.handlers, args):
            if h.__class__ is ScalarHandler:
                converted.append(h.convert(value))
                packs.append(None)
                continue
            value, pack = h.checked(value)
            if value.__class__ is DeviceArray:
                first = self._check_queue(h, value, first)
            converted.append(value)
            packs.append(pack)
        return grid3, converted, packs

    def _grid(self, grid) -> tuple[int, int, int]:
        """``grid`` as a checked 3-tuple (a grid seen before: one dictionary read)."""
        hit = self._grids.get(grid) if grid.__class__ is tuple else None
        if hit is not None:
            return hit
        grid3 = normalize_grid(grid)
        check_global_range(grid3, self.workgroup_size)
        if grid.__class__ is tuple and all(n.__class__ is int for n in grid):   # not (True,) == (1,)
            if len(self._grids) > 256:
                self._grids.clear()
            self._grids[grid] = grid3
        return grid3

    def _check_queue(self, h: ArrayHandler, desc: DeviceArray, first):
        """All device arrays of a launch share one queue, in this kernel's context."""
        if first is None:
            if desc.api != self.backend.api:
                raise h._fail(f"a {desc.api} array cannot be launched through the {self.backend.api} runtime; "
                              "pass arrays of one runtime (dpnp/USM with dpctl, pyopencl arrays with pyopencl)")
            if desc.queue is not self._queue_in_context and not self.backend.same_context(desc.queue):
                raise h._fail(f"the array's queue ({queue_label(desc.queue)}) is not in the context this "
                              f"kernel was built for ({queue_label(self.queue)})")
            self._queue_in_context = desc.queue        # asking the runtime again costs microseconds
            return (h, desc)
        h0, d0 = first
        if not same_queue(desc.queue, d0.queue):
            raise h._fail(f"is on {queue_label(desc.queue)} but {h0.where} is on {queue_label(d0.queue)}; "
                          "all device arrays of one launch must share one queue (copy one with "
                          "dpnp.asarray(x, sycl_queue=...))")
        return first

    def prepare(self, grid, args, reuse_buffers: bool = False) -> PreparedLaunch:
        """Validate, then copy numpy arrays to the device; returns the ready launch.

        With ``reuse_buffers`` the device buffers of the previous call are reused when
        their sizes match (the launch then owns them only until the next call).
        """
        grid3, converted, packs = self._checked(grid, args)   # every check before the device is touched
        native, copy_back, keep, queue, copied, copies = [], [], [], None, False, []
        pool = self._thread_pool() if reuse_buffers else None
        for h, value, pack in zip(self.handlers, converted, packs):
            if pack is None:
                native.append(value)
            elif value.__class__ is DeviceArray:
                native.append(self.backend.arg(value))
                native += pack[0]
                keep.append(value.owner)
                queue = value.queue
            else:
                buf = self._put_array(h, value, pack, copy_back, pool)
                native.append(buf)
                native += pack[0]
                copies.append((h, pack, buf))
                copied = True
        gsize, lsize = self._ranges(grid3)
        if pool is not None:
            self._local.plan = self._plan(grid, converted, packs, native, copies, gsize, lsize) if not keep else None
        return PreparedLaunch(self, native, gsize, lsize, copy_back, queue, tuple(keep), copied, next(LAUNCH_IDS))

    @staticmethod
    def _plan(grid, converted, packs, native, copies, gsize, lsize) -> tuple | None:
        """What a later launch with numpy arrays of the same dtypes, shapes and strides (and
        any scalar values) re-does, or None: the grid as given, each argument's expected
        (dtype, shape, strides) (None for a scalar), the native arguments (this thread's
        reused buffers), the arrays to copy in as (handler, pack, buffer), the ranges.  It
        holds no caller's array."""
        if grid.__class__ is not tuple:
            return None
        expected = []
        for value, pack in zip(converted, packs):
            if pack is not None and value.__class__ is not np.ndarray:   # a numpy subclass
                return None
            expected.append(None if pack is None else (value.dtype, value.shape, value.strides))
        return grid, tuple(expected), native, tuple(copies), gsize, lsize

    def _launch_planned(self, grid, args) -> bool:
        """Launch numpy-array arguments through this thread's plan (see :meth:`_plan`): the
        arrays' layouts passed every check when the plan was made, so only the scalars are
        converted (and checked), the arrays copied in, the kernel run and the written
        arrays copied back.  False (nothing done) when ``args`` do not fit the plan."""
        plan = getattr(self._local, "plan", None)
        if plan is None or grid.__class__ is not tuple or grid != plan[0] or \
                (args.__class__ is not tuple and args.__class__ is not list) or len(args) != len(plan[1]):
            return False
        for value, want in zip(args, plan[1]):
            if want is not None and (value.__class__ is not np.ndarray or value.shape != want[1]
                                     or value.strides != want[2] or value.dtype != want[0]):
                return False
        for h, _, _ in plan[3]:
            if h.written and not args[h.position].flags.writeable:
                return False                  # the full checks say why
        native = list(plan[2])
        for handler, slot in self._scalar_slots:
            native[slot] = handler.convert(args[handler.position])
        backend, copy_back = self.backend, []
        for h, pack, buf in plan[3]:
            value = args[h.position]
            staged = value if pack[2] else h.stage(value, pack[1])
            backend.write(buf, staged)        # arrays are never empty (checked)
            if h.written:
                copy_back.append((buf, staged, value))
        backend.submit(self.native_kernel, native, plan[4], plan[5], None)
        _copy_back(backend, copy_back)
        return True

    def _ranges(self, grid3: tuple) -> tuple:
        """(global, local) range of a grid in the backend's order (remembered per grid)."""
        hit = self._range_memo.get(grid3)
        if hit is None:
            gsize = (grid3[0] * self.workgroup_size, grid3[1], grid3[2])
            lsize = (self.workgroup_size, 1, 1)
            if self.backend.reverse_ranges:
                gsize, lsize = gsize[::-1], lsize[::-1]
            if len(self._range_memo) > 256:
                self._range_memo.clear()
            hit = self._range_memo[grid3] = (list(gsize), list(lsize))
        return hit

    def _thread_pool(self) -> dict:
        """This thread's reusable device buffers: param position -> (bytes, device buffer)."""
        try:
            return self._local.pool
        except AttributeError:
            pool = self._local.pool = {}
            return pool

    def _buffer(self, position: int, nbytes: int, pool: dict | None):
        """A device buffer of ``nbytes``: from the pool when one of that size is there."""
        if pool is None:
            return self.backend.alloc(nbytes)
        cached = pool.get(position)
        if cached is not None and cached[0] == nbytes:
            return cached[1]
        buf = self.backend.alloc(nbytes)
        pool[position] = (nbytes, buf)
        return buf

    def _put_array(self, h: ArrayHandler, value: np.ndarray, pack: tuple, copy_back: list, pool: dict | None):
        """The device buffer holding numpy array ``value`` (laid out as ``pack`` says)."""
        staged = value if pack[2] else h.stage(value, pack[1])
        buf = self._buffer(h.position, staged.nbytes, pool)
        if staged.nbytes:
            self.backend.write(buf, staged)
            if h.written:
                copy_back.append((buf, staged, value))
        return buf

    def bare_submit(self, prepared: PreparedLaunch) -> None:
        """Raw submit of ``prepared`` (same program and arguments) for timing."""
        prepared.submit()


def _check_arg_count(native, kernel: LoadedKernel) -> None:
    """The SPIR-V kernel must take exactly the arguments the ABI describes."""
    count = getattr(native, "num_args", None)
    if count is not None and count != kernel.num_native_args:
        raise BuildError(f"kernel {kernel.abi.kernel_name!r} takes {count} SPIR-V arguments but its ABI "
                         f"describes {kernel.num_native_args}")

