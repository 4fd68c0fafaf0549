"""The launch path's precomputed parts (runtime/loaded_kernel.py, runtime/memo.py, jit.py):

* the checks of an array argument are made once per dtype/shape/strides and remembered
  with its native extents ("pack"), and a later launch with new scalar values or new
  arrays of that layout reuses the pack and computes the right result;
* a numpy launch like the thread's last one goes through that launch's plan (no checks,
  no binding), new data and scalars reaching the kernel;
* an in-order pyopencl queue keeps one in-flight entry per repeated launch;
* what is not in the pack (writability, dtype) is still checked on every launch;
* pyopencl kernels take typed scalars (declared once), and pyopencl arrays join the
  same-arguments memo without the memo keeping them alive;
* ``import xetile_dsl`` loads neither the runtime nor the compiler.
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl import environ, knobs
from xetile_dsl.runtime import inflight, launchers
from xetile_dsl.runtime.devices import get_device

import launch_kernels
from launch_kernels import X
from conftest_tools import require_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


shifted_scale = launch_kernels.shifted_scale()
# row offsets neither 1 nor a multiple of 16: one specialisation of ``row0`` serves them all
CALLS = [(0.5, 8), (-2.0, 24), (3.25, 40), (0.5, 24)]


def _expected(s: float, row0: int, rows: int) -> np.ndarray:
    return np.float32(s) * X[row0:row0 + rows]


def _launch(x, y, s, row0):
    return shifted_scale[(y.shape[0] // 8,)](x, y, s, row0, BM=8, BN=16)


def _packs(x, y, s, row0) -> list[int]:
    """How many packs each array parameter of the launched kernel holds."""
    loaded = shifted_scale.resolve((y.shape[0] // 8,), None, (x, y, s, row0), {"BM": 8, "BN": 16})[0]
    return [len(h._packs) for h in loaded.handlers if hasattr(h, "_packs")]


def test_numpy_launches_reuse_one_pack_per_layout():
    for s, row0 in CALLS:                       # new arrays and scalar values every call
        y = np.full((16, 16), np.nan, np.float32)
        _launch(X.copy(), y, s, row0)
        np.testing.assert_array_equal(y, _expected(s, row0, 16))
    assert _packs(X, y, 0.5, 8) == [1, 1]       # one layout per array: one pack each
    wide = np.full((32, 16), np.nan, np.float32)  # another output layout: a second pack for y
    _launch(X, wide, -2.0, 8)
    np.testing.assert_array_equal(wide, _expected(-2.0, 8, 32))
    assert _packs(X, wide, 0.5, 8) == [1, 2]


def test_a_remembered_pack_does_not_skip_the_per_array_checks():
    y = np.zeros((16, 16), np.float32)
    _launch(X, y, 1.0, 8)
    read_only = np.zeros((16, 16), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(xd.LaunchError, match=r"argument 1 \('y'\).*read-only"):
        _launch(X, read_only, 1.0, 8)            # the same layout as y: only writability differs
    with pytest.raises(xd.LaunchError, match=r"argument 2 \('s'\).*out of range"):
        _launch(X, y, 1e300, 8)


_CL = []   # (context, queue): the context must outlive every array made on the queue


def _cl_array(host):
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    if not _CL:
        ctx = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])
        _CL.extend([ctx, cl.CommandQueue(ctx)])
    return cla.to_device(_CL[1], host)


def test_pyopencl_typed_scalars_follow_every_value():
    """The same pyopencl arrays launched with changing float and int scalars (the memo's
    new-scalars path), then again with the same ones (its same-arguments path)."""
    x, y = _cl_array(X), _cl_array(np.zeros((16, 16), np.float32))
    for s, row0 in CALLS + CALLS[:1] * 2:
        _launch(x, y, s, row0)
        np.testing.assert_array_equal(y.get(), _expected(s, row0, 16))
    assert shifted_scale._last_call is not None   # pyopencl arrays are remembered


def test_pyopencl_memo_notices_an_array_given_another_buffer():
    """A pyopencl array's buffer is a plain attribute: rebinding it is a different argument."""
    x, y = _cl_array(X), _cl_array(np.zeros((16, 16), np.float32))
    _launch(x, y, 2.0, 8)
    other = _cl_array(np.zeros((16, 16), np.float32))
    y.base_data = other.base_data                # y now writes into other's buffer
    _launch(x, y, 2.0, 8)
    np.testing.assert_array_equal(other.get(), _expected(2.0, 8, 16))


def test_pyopencl_memo_does_not_keep_arrays_alive():
    x, y = _cl_array(X), _cl_array(np.zeros((16, 16), np.float32))
    _launch(x, y, 1.5, 8)
    _launch(x, y, 1.5, 8)                         # the remembered launch, re-enqueued
    xd.synchronize()                              # in-flight launches keep their arrays until done
    np.testing.assert_array_equal(y.get(), _expected(1.5, 8, 16))
    alive = [weakref.ref(x), weakref.ref(y)]
    del x, y
    gc.collect()
    assert [ref() is None for ref in alive] == [True, True]
    assert shifted_scale._last_call is None      # forgotten with its arrays


def test_import_loads_neither_runtime_nor_compiler():
    heavy = ("xetile_dsl.runtime.launchers", "xetile_dsl.runtime.loaded_kernel", "xetile_dsl.runtime.devices",
             "xetile_dsl.runtime.cache",
             "xetile_dsl.targets", "xetile_dsl.compiler", "xetile_dsl.codegen", "xetile_dsl.lowering",
             "xdsl", "llvmlite", "dpctl", "pyopencl")
    inside = tuple(h + "." for h in heavy)           # a heavy module or one inside a heavy package
    code = ("import json, sys; import xetile_dsl; "
            f"print(json.dumps(sorted(m for m in sys.modules if m in {heavy!r} or m.startswith({inside!r}))))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_environ_reads_follow_every_change(monkeypatch):
    """xetile_dsl/environ.py reads os.environ's own bytes: set, changed, removed and
    non-ASCII values read as os.environ.get does."""
    name = "XTDSL_TEST_ENVIRON_READ"
    monkeypatch.delenv(name, raising=False)
    assert environ.get(name) is None and environ.get(name, "d") == "d"
    for value in ("1", "", "dévice:0"):
        monkeypatch.setenv(name, value)
        assert environ.get(name) == os.environ.get(name) == value
    monkeypatch.delenv(name)
    assert environ.get(name, "gone") == "gone"


def test_unset_and_the_interpreter_knob_follow_every_change(monkeypatch):
    """environ.unset (the launch path's read of XETILE_INTERPRET) sees every change, also
    of a name it has not read before; knobs.interpreting follows it."""
    name = "XTDSL_TEST_ENVIRON_UNSET"
    monkeypatch.delenv(name, raising=False)
    assert environ.unset(name)
    seen = []
    for value in ("x", "", "0"):
        monkeypatch.setenv(name, value)
        seen.append(environ.unset(name))
    monkeypatch.delenv(name)
    assert seen + [environ.unset(name)] == [False, True, False, True]
    interpreting = []
    for value in ("1", "0", "", "subgroups"):
        monkeypatch.setenv("XETILE_INTERPRET", value)
        interpreting.append(knobs.interpreting())
    assert interpreting == [True, False, False, True]


def test_inflight_launches_of_other_arrays_do_not_release_each_other():
    """Each prepared launch is tracked under its own key until it is done: a later launch of
    other arrays (whose prepared launch may reuse a dead one's id()) must not release the
    arrays of one that may still run."""
    dpnp = require_module("dpnp")
    loaded = shifted_scale.resolve((2,), None, (dpnp.asarray(X), dpnp.zeros((16, 16), dtype=np.float32), 1.0, 8),
                                   {"BM": 8, "BN": 16})[0]
    alive = []
    for _ in range(4):
        x, y = dpnp.asarray(X), dpnp.zeros((16, 16), dtype=np.float32)
        prepared = loaded.prepare((2,), [x, y, 2.0, 8])
        loaded.launch_async(prepared)
        alive.append(weakref.ref(y.get_array()))
        del x, y, prepared                       # the next prepared launch may get this one's id()
    gc.collect()
    assert [ref() is not None for ref in alive] == [True] * 4   # all still tracked (not yet synchronized)
    xd.synchronize()
    gc.collect()
    assert [ref() is None for ref in alive] == [True] * 4       # released once done


def test_a_repeated_signature_reuses_its_kernel_and_a_new_one_does_not():
    """Calls with the last full call's grid, keywords and argument types skip the kernel
    lookup; an int that selects another specialisation (a multiple of 16) does not."""
    kernels = []
    for row0 in (8, 16, 24, 40, 16):
        y = np.full((16, 16), np.nan, np.float32)
        _launch(X, y, 0.5, row0)
        np.testing.assert_array_equal(y, _expected(0.5, row0, 16))
        kernels.append(shifted_scale._last_signature[6])
    k8, k16, k24, k40, k16_again = kernels
    assert k8 is k24 is k40 and k16 is k16_again and k8 is not k16


def test_an_in_order_pyopencl_queue_keeps_one_inflight_entry_per_launch():
    """On an in-order queue (pyopencl's default) each launch ends after the one before, so
    repeated launches of the same arrays keep one in-flight entry (one dictionary store per
    launch); on an out-of-order queue every launch's event is kept until it is done."""
    cl = require_module("pyopencl")
    x, y = _cl_array(X), _cl_array(np.zeros((16, 16), np.float32))
    xd.synchronize()
    for s in (1.0, 2.0) * 20:
        _launch(x, y, s, 8)
    assert len(inflight.INFLIGHT[id(_CL[1])][2]) == 1
    xd.synchronize()
    np.testing.assert_array_equal(y.get(), _expected(2.0, 8, 16))
    out_of_order = cl.CommandQueue(_CL[0], properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    x2, y2 = x.with_queue(out_of_order), y.with_queue(out_of_order)
    for _ in range(3):
        _launch(x2, y2, 3.0, 8)
    assert len(inflight.INFLIGHT[id(out_of_order)][2]) == 3
    xd.synchronize()
    assert id(out_of_order) not in inflight.INFLIGHT
    np.testing.assert_array_equal(y.get(), _expected(3.0, 8, 16))


def test_numpy_launches_of_one_layout_skip_the_checks_and_stay_right(monkeypatch):
    """numpy arrays with the dtypes, shapes and strides of the thread's last numpy launch
    go through its plan: no argument checks, yet new data and new scalar values reach the
    kernel (padded views included: they are staged), scalars are still checked, and a
    read-only output still fails the full checks.  The plan keeps no caller's array."""
    grid, consts = (2,), {"BM": 8, "BN": 16}
    loaded = shifted_scale.resolve(grid, None, (X, np.zeros((16, 16), np.float32), 1.0, 8), consts)[0]
    checks = []
    full_checks = loaded._checked
    monkeypatch.setattr(loaded, "_checked", lambda *a: checks.append(1) or full_checks(*a))
    wide = np.zeros((64, 32), np.float32)
    for step, (s, row0) in enumerate(CALLS):
        wide[:, :16] = X + step                   # new data each call, through a padded view
        y = np.full((16, 16), np.nan, np.float32)
        _launch(wide[:, :16], y, s, row0)
        np.testing.assert_array_equal(y, np.float32(s) * (X[row0:row0 + 16] + step))
    assert len(checks) == 1                       # only the first launch was checked in full
    with pytest.raises(xd.LaunchError, match=r"argument 2 \('s'\).*out of range"):
        _launch(wide[:, :16], y, 1e300, 8)
    y.flags.writeable = False
    with pytest.raises(xd.LaunchError, match=r"argument 1 \('y'\).*read-only"):
        _launch(wide[:, :16], y, 1.0, 8)
    alive = [weakref.ref(wide), weakref.ref(y)]
    del wide, y
    gc.collect()
    assert [ref() is None for ref in alive] == [True, True]


def test_repeated_numpy_launches_skip_the_binding_and_stay_right(monkeypatch):
    """A numpy launch like the previous one (numpy arrays and scalars of the same kind,
    grid, keywords) goes from the call's memo straight to the loaded kernel's plan: no
    binding or kernel lookup, and new data and scalar values reach the kernel; an int
    that selects another specialisation (a multiple of 16) goes the full way."""
    lookups = []
    full_lookup = shifted_scale._same_signature
    monkeypatch.setattr(shifted_scale, "_same_signature", lambda *a: lookups.append(a[2]) or full_lookup(*a))
    x = X.copy()
    for step, (s, row0) in enumerate(CALLS + [(1.5, 16), (2.5, 8)]):
        x[:] = X + step
        y = np.full((16, 16), np.nan, np.float32)
        _launch(x, y, s, row0)
        np.testing.assert_array_equal(y, np.float32(s) * (X[row0:row0 + 16] + step))
    assert [args[3] for args in lookups] == [8, 16, 8]   # the first call, and each new specialisation


def test_numpy_copies_move_every_byte_of_builtin_and_bf16_arrays():
    """The dpctl backend copies a host array through a byte view of its buffer (bf16, which
    numpy does not export, through a numpy byte view): every byte reaches the device and
    comes back, also for an array smaller than its (padded) device buffer."""
    require_module("dpctl")
    ml_dtypes = require_module("ml_dtypes")
    backend = launchers.get_launcher(get_device(backend="dpctl")).backend
    rng = np.random.default_rng(5)
    for dtype, shape in ((np.float16, (8, 24)), (ml_dtypes.bfloat16, (4, 16)), (np.int32, (3,)), (np.float32, (2, 3))):
        host = rng.standard_normal(shape).astype(dtype)
        buf = backend.alloc(host.nbytes)
        backend.write(buf, host)
        back = np.zeros_like(host)
        backend.read(buf, back)
        assert back.tobytes() == host.tobytes(), (dtype, shape)
