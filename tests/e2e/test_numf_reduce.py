"""``tile_reduce`` with maxnumf / minnumf (a NaN operand loses: numpy's nanmax / nanmin) on
the CPU device, down the rows (inside each lane) and across the columns (across lanes),
with NaN, infinities and all-NaN slices.  Codegen emits OpenCL fmax / fmin, one ``sel`` on
Xe (codegen/emit/vector_ops.py); ops.attention reduces its scores this way."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def numf_reduce_kernel(x, y, KIND: xt.constexpr, AXIS: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 16]))
    r = xt.tile_reduce(KIND, v, AXIS)
    xt.store_tile(xt.broadcast_to(r, [32, 16]), xt.init_tile(y, [0, 0], [32, 16]))


def _input() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    x[rng.random((32, 16)) < 0.2] = np.nan
    x[rng.random((32, 16)) < 0.1] = -np.inf
    x[rng.random((32, 16)) < 0.05] = np.inf
    x[:, 5] = np.nan   # an all-NaN column: NaN either way
    x[3, :] = np.nan   # an all-NaN row
    return x


@pytest.mark.parametrize("kind,ref", [("maxnumf", np.nanmax), ("minnumf", np.nanmin)])
@pytest.mark.parametrize("axis", [0, 1])
def test_numf_reduce_ignores_nan_on_the_device(kind, ref, axis):
    x = _input()
    y = np.zeros_like(x)
    numf_reduce_kernel.on("cpu-pvc")[(1,)](x, y, KIND=kind, AXIS=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
        want = np.broadcast_to(ref(x, axis=axis, keepdims=True), x.shape)
    np.testing.assert_array_equal(y, want)
