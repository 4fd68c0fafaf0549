"""Mistakes with N-D arrays are located errors at the user's line, saying what is legal,
alike in every flavour (the compiled ones and the interpreter share the frontend): too
many or too few offsets or extents, leading tile extents other than 1, slices with the
wrong number of indices or with ':', scattered tiles on an N-D array, arrays of rank 5;
and the IR the frontend builds for a slice (the leading indices folded into the offset of
a ``memref.reinterpret_cast``)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import CompilationError


@xd.jit
def too_few_offsets(x, BM: xt.constexpr):
    t = xt.init_tile(x, [0, 0], [BM, 16])  # E:too_few_offsets
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def too_many_offsets(x, BM: xt.constexpr):
    t = xt.init_tile(x, [0, 0, 0, 0, 0], [1, 1, 1, BM, 16])  # E:too_many_offsets
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def short_shape(x, BM: xt.constexpr):
    t = xt.init_tile(x, [0, 0, 0, 0], [BM, 16])  # E:short_shape
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def leading_extent(x, BM: xt.constexpr):
    t = xt.init_tile(x, [0, 0, 0, 0], [2, 1, BM, 16])  # E:leading_extent
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def slice_count(x, BM: xt.constexpr):
    t = xt.init_tile(x[0], [0, 0], [BM, 16])  # E:slice_count
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def slice_colon(x, BM: xt.constexpr):
    t = xt.init_tile(x[0, :], [0, 0], [BM, 16])  # E:slice_colon
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def slice_not_a_tile(x, BM: xt.constexpr):
    v = xt.load_tile(x[0, 0])  # E:slice_not_a_tile
    xt.store_tile(v, xt.init_tile(x[0, 0], [0, 0], [BM, 16]))


@xd.jit
def float_index(x, s, BM: xt.constexpr):
    t = xt.init_tile(x[s, 0], [0, 0], [BM, 16])  # E:float_index
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def scattered_nd(x, BM: xt.constexpr):
    t = xt.init_tile(x, xt.arange(0, 16))  # E:scattered_nd
    xt.store_scatter(xt.load_gather(t), t)


def _line(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(_line)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# E:{marker}"))


def _x():
    return np.zeros((2, 3, 16, 16), np.float32)


CASES = [
    (too_few_offsets, (), "init_tile on a 4-D array takes 4 offsets, got 2"),
    (too_many_offsets, (), "init_tile on a 4-D array takes 4 offsets, got 5"),
    (short_shape, (), "takes a shape of 4 extents, got 2"),
    (leading_extent, (), "its leading extents on a 4-D array must be 1, got [2, 1, 16, 16]"),
    (slice_count, (), "a 4-D array takes 2 leading indices to select a 2-D slice (x[z, h]"),
    (slice_colon, (), "':' slices are not supported"),
    (slice_not_a_tile, (), "load_tile expects a tile (from init_tile), got an array of f32"),
    (float_index, (1.5,), "an array index must be an integer, got a runtime scalar of type f32"),
    (scattered_nd, (), "slice the 4-D array first, xt.init_tile(x[z, h], offsets)"),
]


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("kernel,extra,message", CASES, ids=[c[0].__name__ for c in CASES])
def test_nd_mistakes_are_located(kernel, extra, message, target):
    with pytest.raises(CompilationError) as info:
        kernel.on(target)[(1,)](_x(), *extra, BM=16)
    text = str(info.value)
    assert f"test_nd_array_errors.py:{_line(kernel.__name__)}:" in text, text
    assert message in text, text
    assert "^" in text and "internal compiler error" not in text


@xd.jit
def copy_slice(x, y, BM: xt.constexpr):
    z = xt.program_id(0)
    xt.store_tile(xt.load_tile(xt.init_tile(x[z, 1], [0, 0], [BM, 16])), xt.init_tile(y, [0, 0], [BM, 16]))


def test_rank_five_is_refused():
    with pytest.raises(CompilationError, match="arrays must be 1-D, 2-D, 3-D or 4-D, got a 5-D array"):
        copy_slice.on("interpret")[(1,)](np.zeros((1, 1, 1, 16, 16), np.float32), np.zeros((16, 16), np.float32),
                                         BM=16)


def test_slice_ir_folds_the_leading_indices():
    """x[z, 1]: offset = z * stride0 + 1 * stride1, the view's extents and row stride the
    array's last two (printed and parsed back as every stage's IR is)."""
    compiled = xd.compile(copy_slice, {"x": "f32[:,:,:,:]", "y": "f32[:,:]"}, {"BM": 16}, target="cpu-pvc")
    text = compiled.asm["xetile"]
    assert "memref.reinterpret_cast" in text
    assert "memref<?x?x?x?xf32, strided<[?, ?, ?, 1]>> to memref<?x?xf32, strided<[?, 1], offset: ?>>" in text
    roundtrip = xd.compile_mlir(text, target="cpu-pvc")
    assert roundtrip.abi.params[0].ndim == 4
