"""runtime/replay.py: a launch repeated with the same device arrays is re-enqueued by its
Replay (jit.py ``_last_call[5]``), which converts each new scalar value once per
parameter and keeps no caller's array.

* every scalar value reaches the kernel, of each scalar type a Python call passes (int:
  i32, or i64 beyond 32 bits; float: f32), including float zeros of either sign and NaN;
  an int selecting another specialisation (1, a multiple of 16) launches the right kernel;
* a value is checked and converted once, then read from the replay (the packer);
* the replay holds no caller's array, also after it re-packed new scalar values;
* replayed launches stay in order with dpnp work on the same queue, both ways.
"""
from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
import launch_kernels
from launch_kernels import X
from conftest_tools import require_dpnp
from xetile_dsl.runtime import arguments
from xetile_dsl.runtime.replay import Replay


shift_scale = launch_kernels.shifted_scale()


def _launch(x, y, s, row0):
    return shift_scale[(2,)](x, y, s, row0, BM=8, BN=16)


def _expected(s: float, row0: int) -> np.ndarray:
    return np.float32(s) * X[row0:row0 + 16]


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal, NaN where NaN is, and zeros of the same sign."""
    return np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))


def _arrays(dpnp):
    return dpnp.asarray(X), dpnp.zeros((16, 16), dtype=np.float32)


def test_changing_scalars_of_each_type_reach_the_kernel():
    dpnp = require_dpnp()
    x, y = _arrays(dpnp)
    calls = [(0.5, 8), (-2.0, 24), (0.0, 8), (-0.0, 8), (0.0, 8), (math.nan, 24), (3.25, 40), (3.25, 40),
             (0.5, 1), (0.5, 16), (-0.0, 32), (0.5, 9)]      # 1 and 16, 32: other specialisations
    for s, row0 in calls:
        _launch(x, y, s, row0)
        xd.synchronize()
        got = dpnp.asnumpy(y)
        assert _same_bits(got, _expected(s, row0)), (s, row0)
    assert isinstance(shift_scale._last_call[5], Replay)


@xd.jit
def wide_and_narrow(out, n, k, W: xt.constexpr):
    """``out`` rows: n * 3 - 1 and n + k in int64 (n an i64 argument, k an i32 one)."""
    xt.store_tile(xt.full([1, W], n * 3 - 1, xt.int64), xt.init_tile(out, [0, 0], [1, W]))
    xt.store_tile(xt.full([1, W], n, xt.int64) + k, xt.init_tile(out, [1, 0], [1, W]))


def test_changing_i64_and_i32_scalars_reach_the_kernel():
    dpnp = require_dpnp()
    out = dpnp.zeros((2, 16), dtype=np.int64)
    replays = set()
    for n, k in ((2**40 + 12345, -7), (2**40 + 12346, 5), (2**33 + 3, -7), (-(2**35) - 9, 3), (2**40 + 12345, 5)):
        wide_and_narrow[(1,)](out, n, k, W=16)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(out), np.repeat(np.array([[n * 3 - 1], [n + k]]), 16, axis=1))
        replays.add(id(wide_and_narrow._last_call[5]))
    assert len(replays) == 1                             # every launch after the first replayed


def _counting_converts(monkeypatch) -> list:
    converted = []
    original = arguments.ScalarHandler.convert

    def counting(handler, value):
        converted.append(value)
        return original(handler, value)
    monkeypatch.setattr(arguments.ScalarHandler, "convert", counting)
    return converted


def test_each_scalar_value_is_checked_and_converted_once(monkeypatch):
    """The replay keeps each value's native argument: alternating two values converts
    each once (before the Replay, every launch converted its scalars again)."""
    dpnp = require_dpnp()
    x, y = _arrays(dpnp)
    _launch(x, y, 2.0, 8)
    replay = shift_scale._last_call[5]
    converted = _counting_converts(monkeypatch)
    for i in range(10):
        _launch(x, y, (2.0, -1.5)[i & 1], (8, 24)[i & 1])
    xd.synchronize()
    np.testing.assert_array_equal(dpnp.asnumpy(y), _expected(-1.5, 24))
    assert shift_scale._last_call[5] is replay          # every launch replayed
    assert sorted(converted) == [-1.5, 2.0, 8, 24]       # each value once
    with pytest.raises(xd.LaunchError, match=r"argument 2 \('s'\).*out of range"):
        _launch(x, y, 1e300, 8)                          # a new value is still checked


def test_a_replay_repacked_with_new_scalars_keeps_no_array_alive():
    dpnp = require_dpnp()
    x, y = _arrays(dpnp)
    for s in (1.5, 2.5, 3.5):
        _launch(x, y, s, 8)                              # new scalars: the replay's own lists
    xd.synchronize()
    np.testing.assert_array_equal(dpnp.asnumpy(y), _expected(3.5, 8))
    replay = shift_scale._last_call[5]
    alive = [weakref.ref(x.get_array()), weakref.ref(y.get_array())]
    del x, y
    gc.collect()
    assert [ref() is None for ref in alive] == [True, True]
    assert shift_scale._last_call is None                # forgotten with its arrays
    assert replay.arrays and all(ref() is None for _, ref, _ in replay.arrays)


def test_replayed_launches_stay_in_order_with_dpnp_work_both_ways():
    """dpnp writes x in place before each launch (the launch must wait for it) and copies
    y after it (the copy must wait for the launch, and the next launch, which writes y
    again, for the copy)."""
    dpnp = require_dpnp()
    x, y = _arrays(dpnp)
    copies, bases = [], []
    for i in range(12):
        x += 1                                           # dpnp work the launch reads
        s = (0.5, -2.0, 4.0)[i % 3]
        _launch(x, y, s, 8)
        copies.append((s, dpnp.copy(y)))                 # dpnp work reading the launch's output
        bases.append(i + 1)
    xd.synchronize()
    for (s, copy), base in zip(copies, bases):
        np.testing.assert_array_equal(dpnp.asnumpy(copy), np.float32(s) * (X[8:24] + base))


def test_a_replay_notices_other_arrays_of_the_same_kind():
    """Alternating two outputs (and handing the input as its usm_ndarray): the replay of
    one launch must not take the other's arrays for its own."""
    dpnp = require_dpnp()
    x, y1 = _arrays(dpnp)
    y2 = dpnp.zeros((16, 16), dtype=np.float32)
    for i in range(6):
        s = float(i + 1)
        _launch(x if i % 3 else x.get_array(), (y1, y2)[i & 1], s, 8)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy((y1, y2)[i & 1]), _expected(s, 8))


# --- direct launches of a loaded kernel (LoadedKernel.launch, not through @jit) -------------

def _loaded_kernel(x, y):
    """The loaded kernel ``_launch`` runs for these arrays, launched directly below."""
    return shift_scale.resolve((2,), None, (x, y, 0.5, 8), {"BM": 8, "BN": 16})[0]


def test_direct_launches_replay_and_share_the_jit_replay(monkeypatch):
    """Direct launches of the loaded kernel, mixed with @jit calls, go through one Replay:
    each scalar value is converted once in all (before, each direct launch with a new
    value converted its scalars again), and every result is right."""
    dpnp = require_dpnp()
    x, y = _arrays(dpnp)
    loaded = _loaded_kernel(x, y)
    _launch(x, y, 2.0, 8)
    replay = shift_scale._last_call[5]
    converted = _counting_converts(monkeypatch)
    calls = [(-1.5, 24), (2.0, 8), (-1.5, 24), (2.0, 8), (-1.5, 24), (2.0, 8)]
    for i, (s, row0) in enumerate(calls):
        if i % 3:
            loaded.launch((2, 1, 1), [x, y, s, row0])
        else:
            _launch(x, y, s, row0)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(y), _expected(s, row0))
    assert loaded._memo[3] is replay and shift_scale._last_call[5] is replay
    assert sorted(converted) == [-1.5, 2.0, 8, 24]       # each value once


def test_a_direct_launch_keeps_its_arrays_until_done_not_the_callers_list():
    """The in-flight record holds the arrays of a replayed direct launch, not the list the
    caller passed (which it may empty or reuse), until synchronize(); then nothing does."""
    dpnp = require_dpnp()
    x, y = _arrays(dpnp)
    loaded = _loaded_kernel(x, y)
    args = [x, y, 3.0, 8]
    loaded.launch((2,), args)
    loaded.launch((2,), args)                            # replayed
    alive = [weakref.ref(x.get_array()), weakref.ref(y.get_array())]
    result = y
    args[:] = []
    del x, y
    gc.collect()
    assert [ref() is not None for ref in alive] == [True, True]   # still in flight
    xd.synchronize()
    np.testing.assert_array_equal(dpnp.asnumpy(result), _expected(3.0, 8))
    del result
    gc.collect()
    assert [ref() is None for ref in alive] == [True, True]
    assert loaded._memo is None                          # forgotten with its arrays
