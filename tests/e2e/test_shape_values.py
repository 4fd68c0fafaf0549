"""``x.shape`` of an array argument inside a kernel is the array's real extent at launch:
a row loop bounded by ``x.shape[0]`` runs over every row and
``x.shape[1]`` works in arithmetic — compiled (CPU device, PVC and ARC flavours) and in
the interpreter — while the static shape of an ``xt.slm_alloc`` buffer still folds to
compile-time ints (it can size a tile)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

LANES = {"cpu": 16, "cpu-arc": 8, "interpret": 16, "interpret-subgroups": 16}


@xd.jit
def add_extents_by_rows(x, y, W: xt.constexpr):
    """``y = x + (x.shape[1] * 1000 + y.shape[0])``, 16 rows per iteration of a loop
    bounded by ``x.shape[0]`` (the last block is partial: padded reads, masked writes)."""
    for r in range(0, x.shape[0], 16):
        v = xt.load_tile(xt.init_tile(x, [r, 0], [16, W]))
        xt.store_tile(v + (x.shape[1] * 1000 + y.shape[0]), xt.init_tile(y, [r, 0], [16, W]))


@xd.jit
def static_slm_shape(x, y, W: xt.constexpr):
    """An SLM buffer's shape is static: it sizes tiles (constexprs only) and folds into
    arithmetic."""
    s = xt.slm_alloc([16, W], xt.float32)
    bias = xt.full(s.shape, s.shape[0] * 100 + s.shape[1], xt.float32)
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], s.shape)) + bias, xt.init_tile(s, [0, 0], [16, W]))
    xt.barrier()
    xt.store_tile(xt.load_tile(xt.init_tile(s, [0, 0], [16, W])), xt.init_tile(y, [0, 0], [16, W]))


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret", "interpret-subgroups"])
def test_row_loop_over_shape_and_shape_arithmetic(target):
    W = LANES[target]
    rng = np.random.default_rng(5)
    for rows in (40, 3):  # one compile per target; two launches with different extents
        x = rng.random((rows, W), dtype=np.float32)
        y = np.full((rows, W), np.nan, np.float32)
        add_extents_by_rows.on(target)[(1,)](x, y, W=W)
        # exact: x < 1 plus an integer below 2**24 rounds the same way in numpy and on the device
        np.testing.assert_array_equal(y, x + np.float32(W * 1000 + rows), err_msg=f"{rows} rows")


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_static_slm_shape_folds(target):
    W = LANES[target]
    x = np.random.default_rng(6).random((16, W), dtype=np.float32)
    y = np.zeros((16, W), np.float32)
    static_slm_shape.on(target)[(1,)](x, y, W=W)
    np.testing.assert_array_equal(y, x + np.float32(1600 + W))


def test_shape_in_the_ir_is_the_runtime_extent():
    """No dynamic-size marker reaches the IR as a constant: the loop bound is the array's
    extent from ``memref.extract_strided_metadata``."""
    k = xd.compile(add_extents_by_rows, signature={"x": "f32[:,:]", "y": "f32[:,:]"}, constants={"W": 16},
                   target="interpret")
    assert "-9223372036854775808" not in k.asm["xetile"]
    assert "memref.extract_strided_metadata" in k.asm["xetile"]
