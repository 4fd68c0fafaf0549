"""maximum/minimum against a constant (ReLU, clamps) compile to one compare and one select
when that is exact: NaN propagation and the order of signed zeros (MLIR's maximumf /
minimumf: NaN wins, -0.0 < +0.0) checked bit for bit on the CPU device in both lane
layouts, for the constants that take that path (max with +0.0, min with -0.0, non-zero
numbers) and a NaN constant.  (The general two-variable path does not order signed zeros,
like numpy and the interpreter: docs/decisions/019-arithmetic-semantics.md.)"""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

SPECIAL = [np.nan, -np.inf, np.inf, 0.0, -0.0, 1.5, -1.5, 2.0, -3.0, 1e-40, -1e-40, 7.0]


@xd.jit
def minmax_const_kernel(x, y, C: xt.constexpr, MAX: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    r = xt.maximum(v, C) if MAX else xt.minimum(C, v)
    xt.store_tile(r, xt.init_tile(y, [0, 0], [8, 16]))


def _reference(x: np.ndarray, c: float, is_max: bool) -> np.ndarray:
    """MLIR maximumf/minimumf element by element: NaN if either is NaN, -0.0 < +0.0."""
    key = lambda v: (v, np.signbit(v) == 0)  # noqa: E731 - orders -0.0 below +0.0
    out = np.empty_like(x)
    for i, v in np.ndenumerate(x):
        if np.isnan(v) or np.isnan(c):
            out[i] = np.nan
        else:
            pick = max if is_max else min
            out[i] = pick((v, np.float32(c)), key=key)
    return out


@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc"])
@pytest.mark.parametrize("c,is_max", [(0.0, True), (-0.0, False), (1.5, True), (-1.5, False), (float("nan"), True),
                                      (float("nan"), False)])
def test_minmax_with_a_constant_is_exact(flavour, c, is_max):
    x = np.resize(np.array(SPECIAL, np.float32), (8, 16))
    y = np.zeros((8, 16), np.float32)
    minmax_const_kernel.on(flavour)[(1,)](x, y, C=c, MAX=int(is_max))
    ref = _reference(x, c, is_max)
    # bit for bit: the sign of zero and NaN-ness are the point of the test
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    same = ~np.isnan(ref)
    np.testing.assert_array_equal(y[same].view(np.uint32), ref[same].view(np.uint32))
