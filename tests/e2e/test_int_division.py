"""Integer division semantics (docs/decisions/019-arithmetic-semantics.md): ``//`` and
``%`` by zero give quotient 0 and remainder the dividend (so ``a == b * (a // b) + a % b``
still holds), and ``MIN // -1`` wraps to MIN with remainder 0 -- the same in compiled
kernels (both CPU lane layouts) and the interpreter, which used to raise.  Tiles and
scalars, signed (floor division, as in Python) and unsigned."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]


@xd.jit
def divide_tiles(a, b, q, r):
    """q = a // b and r = a % b element-wise on one 8x16 tile."""
    va = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    vb = xt.load_tile(xt.init_tile(b, [0, 0], [8, 16]))
    xt.store_tile(va // vb, xt.init_tile(q, [0, 0], [8, 16]))
    xt.store_tile(va % vb, xt.init_tile(r, [0, 0], [8, 16]))


@xd.jit
def divide_scalars(out, n, d):
    """out[0, :] = n // d, out[1, :] = n % d (runtime scalars)."""
    zero = xt.zeros([8, 16], xt.int32)
    xt.store_tile(zero + n // d, xt.init_tile(out, [0, 0], [8, 16]))
    xt.store_tile(zero + n % d, xt.init_tile(out, [8, 0], [8, 16]))


def _expected(a, b):
    """numpy's floor division and modulo where defined; 0 and ``a`` by zero; wrapping."""
    wide_a, wide_b = a.astype(np.int64), np.where(b == 0, 1, b).astype(np.int64)
    q = np.where(b == 0, 0, wide_a // wide_b).astype(a.dtype)    # int32 MIN // -1 wraps back to MIN
    r = np.where(b == 0, wide_a, wide_a % wide_b).astype(a.dtype)
    return q, r


def _operands(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(max(info.min, -50), 50, (8, 16)).astype(dtype)
    b = rng.integers(max(info.min, -6), 7, (8, 16)).astype(dtype)
    b[0, :4] = 0                         # by zero, for dividends of both signs
    a[0, :4] = [7, max(info.min, -7), 0, info.max]
    if info.min < 0:
        a[1, 0], b[1, 0] = info.min, -1  # the one overflowing quotient
    return a, b


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.int32, np.uint32], ids=["i32", "u32"])
def test_tile_division_by_zero_is_defined(dtype, target):
    a, b = _operands(dtype)
    q, r = np.full_like(a, 99), np.full_like(a, 99)
    divide_tiles.on(target)[(1,)](a, b, q, r)
    want_q, want_r = _expected(a, b)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r, want_r)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n, d", [(7, 0), (-7, 0), (-7, 2), (-2**31, -1)])
def test_scalar_division_by_zero_is_defined(n, d, target):
    out = np.full((16, 16), 99, np.int32)
    divide_scalars.on(target)[(1,)](out, n, d)
    want_q, want_r = _expected(np.array([n], np.int32), np.array([d], np.int32))
    np.testing.assert_array_equal(out[:8], np.full((8, 16), want_q[0]))
    np.testing.assert_array_equal(out[8:], np.full((8, 16), want_r[0]))
