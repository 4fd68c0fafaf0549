"""The launch memo (jit.py ``_last_call``, launcher.py ``LoadedKernel._last``) re-enqueues a
repeated launch without re-checking its arguments, but must not keep the caller's arrays
alive: a large device array launched once and deleted is freed (on a GPU it is device
memory)."""
import gc
import weakref

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from conftest_tools import require_dpnp


@xd.jit
def scale_rows(x, y, alpha, BM: xt.constexpr, BN: xt.constexpr):
    """y = alpha * x, one BM x BN tile per program."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(v * alpha, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


def _launch(x, y, alpha):
    return scale_rows[(x.shape[0] // 8,)](x, y, alpha, BM=8, BN=16)


def test_repeated_launch_uses_the_memo_and_stays_right():
    dpnp = require_dpnp()
    x = dpnp.asarray(np.arange(16 * 16, dtype=np.float32).reshape(16, 16))
    y = dpnp.zeros((16, 16), dtype=np.float32)
    for alpha in (2.0, 2.0, 3.0, 3.0):
        _launch(x, y, alpha)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(y), dpnp.asnumpy(x) * np.float32(alpha))
    assert scale_rows._last_call is not None            # the last call is remembered


def test_memo_does_not_keep_deleted_arrays_alive():
    dpnp = require_dpnp()
    x = dpnp.ones((64, 16), dtype=np.float32)
    y = dpnp.zeros((64, 16), dtype=np.float32)
    _launch(x, y, 1.5)
    _launch(x, y, 1.5)                                   # the memoised path
    xd.synchronize()
    np.testing.assert_array_equal(dpnp.asnumpy(y), np.full((64, 16), 1.5, np.float32))
    alive = [weakref.ref(x.get_array()), weakref.ref(y.get_array())]
    del x, y
    gc.collect()
    assert [ref() is None for ref in alive] == [True, True]
    assert scale_rows._last_call is None                # forgotten with its arrays


def test_a_new_array_at_a_reused_address_is_not_mistaken_for_the_old():
    """After an array dies its memo entry is gone, so a new array (perhaps at the same
    address) is checked and described afresh."""
    dpnp = require_dpnp()
    for value in (1.0, 2.0, 3.0):
        x = dpnp.full((16, 16), value, dtype=np.float32)
        y = dpnp.zeros((16, 16), dtype=np.float32)
        _launch(x, y, 2.0)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(y), np.full((16, 16), 2 * value, np.float32))
        del x, y


def test_changing_scalar_reuses_the_arrays_and_is_checked():
    """Same arrays, a new scalar value each launch: the result follows the value, and a
    value out of the parameter's range is still a located LaunchError."""
    dpnp = require_dpnp()
    x = dpnp.asarray(np.arange(16 * 16, dtype=np.float32).reshape(16, 16))
    y = dpnp.zeros((16, 16), dtype=np.float32)
    for alpha in (1.0, 0.5, -2.0, 3.25):
        _launch(x, y, alpha)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(y), dpnp.asnumpy(x) * np.float32(alpha))
    with pytest.raises(xd.LaunchError, match="alpha"):
        _launch(x, y, 1e300)                       # beyond f32: checked on the fast path too


@xd.jit
def scale_by_constant(x, y, S: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """y = x * S (S a compile-time constant)."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(v * S, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


def test_memo_tells_equal_keywords_of_other_bits_or_order_apart():
    """0.0 == -0.0, but they are different kernels: a repeated call with the other zero
    (or the keywords in another order) is not the remembered launch."""
    dpnp = require_dpnp()
    x = dpnp.ones((16, 16), dtype=np.float32)
    y = dpnp.zeros((16, 16), dtype=np.float32)
    signs = []
    for kwargs in ({"S": 0.0, "BM": 8, "BN": 16}, {"S": -0.0, "BM": 8, "BN": 16}, {"BN": 16, "BM": 8, "S": 0.0}):
        scale_by_constant[(2,)](x, y, **kwargs)
        scale_by_constant[(2,)](x, y, **kwargs)          # the memoised path
        xd.synchronize()
        signs.append(np.unique(np.signbit(dpnp.asnumpy(y))).tolist())
    assert signs == [[False], [True], [False]]


def test_a_repeated_launch_passes_the_sign_of_a_zero_scalar():
    """0.0 == -0.0, but x * -0.0 is -0.0: a call with the other zero is not the same call."""
    dpnp = require_dpnp()
    x = dpnp.ones((16, 16), dtype=np.float32)
    y = dpnp.zeros((16, 16), dtype=np.float32)
    signs = []
    for alpha in (0.0, -0.0, -0.0, 0.0, 2.0, -0.0):
        _launch(x, y, alpha)
        xd.synchronize()
        signs.append(np.unique(np.signbit(dpnp.asnumpy(y))).tolist())
    assert signs == [[False], [True], [True], [False], [False], [True]]
