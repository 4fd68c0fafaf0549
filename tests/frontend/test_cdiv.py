"""xt.cdiv: ceil division of Python ints (grids), constexprs (folded) and kernel values
(runtime scalars and integer tiles), checked against numpy's exact ceiling."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import CompilationError
from xetile_dsl.errors import UsageError

N = 16


@xd.jit
def cdiv_kernel(tiles, scalars, folded, n, d, BN: xt.constexpr):
    cols = xt.arange(0, N) - 8                                       # -8 .. 7
    xt.store_tile(xt.cdiv(cols, 3), xt.init_tile(tiles, [0, 0], [1, N]))
    xt.store_tile(xt.cdiv(cols, d), xt.init_tile(tiles, [1, 0], [1, N]))
    xt.store_tile(xt.zeros([1, N], xt.int32) + xt.cdiv(n, BN), xt.init_tile(scalars, [0, 0], [1, N]))
    xt.store_tile(xt.zeros([1, N], xt.int32) + xt.cdiv(n, d), xt.init_tile(scalars, [1, 0], [1, N]))
    xt.store_tile(xt.zeros([1, N], xt.int32) + xt.cdiv(3 * BN + 1, BN), xt.init_tile(folded, [0, 0], [1, N]))


@xd.jit
def float_cdiv(out, x):
    xt.store_tile(xt.zeros([1, N], xt.int32) + xt.cdiv(x, 2), xt.init_tile(out, [0, 0], [1, N]))


def _ceil(a, b):
    return np.ceil(np.asarray(a, np.float64) / b).astype(np.int32)


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_cdiv_inside_kernels_matches_the_exact_ceiling(target):
    n, d, bn = 37, 5, 8
    tiles, scalars, folded = (np.full((2, N), -99, np.int32), np.full((2, N), -99, np.int32),
                              np.full((1, N), -99, np.int32))
    cdiv_kernel.on(target)[(1,)](tiles, scalars, folded, n, d, BN=bn)
    cols = np.arange(N) - 8
    np.testing.assert_array_equal(tiles, np.stack([_ceil(cols, 3), _ceil(cols, d)]))
    np.testing.assert_array_equal(scalars[:, 0], [_ceil(n, bn), _ceil(n, d)])
    np.testing.assert_array_equal(folded, np.full((1, N), 4))


def test_cdiv_on_python_ints_is_the_exact_ceiling():
    for a in range(-20, 21):
        for b in (-7, -3, -1, 1, 2, 3, 16):
            assert xt.cdiv(a, b) == int(np.ceil(a / b)), (a, b)
    assert xt.cdiv(2**70 + 1, 2**10) == 2**60 + 1       # no float rounding


def test_cdiv_refuses_what_is_not_integer_division():
    with pytest.raises(UsageError, match=r"cdiv\(7, 0\): division by zero"):
        xt.cdiv(7, 0)
    with pytest.raises(UsageError, match="ceil division takes integers"):
        xt.cdiv(7.0, 2)
    with pytest.raises(CompilationError, match=r"test_cdiv.py:28:56: error: cdiv takes integers \(ceil division\), "
                                               r"got a runtime scalar of type f32"):
        float_cdiv.on("interpret")[(1,)](np.zeros((1, N), np.int32), 2.5)
