"""1-D arrays and values in the frontend: the IR they build (a ``memref<?xT>`` argument, a
``[1, N]`` tile over its ``[1, n]`` view, no rank casts left) and the located errors of
their misuse (each at the line marked ``# error`` in its kernel, saying what is legal)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.dialects import parse_module
from xetile_dsl.errors import CompilationError


@xd.jit
def scale_rows(x, w, out, BLOCK: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * BLOCK], [BLOCK]))
    s = xt.sum(v) / BLOCK
    row = v[None, :] * 2.0
    xt.store_tile(xt.reshape(row, [BLOCK]) - s, xt.init_tile(out, [0], [BLOCK]))
    xt.store_tile(xt.load_tile(xt.init_tile(w, [0, 0], [1, BLOCK])), xt.init_tile(w, [1, 0], [1, BLOCK]))


def test_one_d_ir_prints_and_parses():
    compiled = xd.compile(scale_rows, {"x": "f32[:]", "w": "f32[:,:]", "out": "f32[:]"}, {"BLOCK": 64},
                          target="pvc")
    text = compiled.asm["xetile"]
    assert "%x: memref<?xf32>" in text and "%out: memref<?xf32>" in text
    assert "unrealized_conversion_cast" not in text            # the frontend's rank casts are gone
    assert "!xetile.tile<1x64xf32" in text
    for stage in ("xetile", "xegpu"):
        parse_module(compiled.asm[stage])                       # every stage parses back


@xd.jit
def two_offsets(x, BLOCK: xt.constexpr):
    t = xt.init_tile(x, [0, 0], [BLOCK])  # error
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def two_sizes(x, BLOCK: xt.constexpr):
    t = xt.init_tile(x, [0], [1, BLOCK])  # error
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def row_of_a_row(x, y, BLOCK: xt.constexpr):
    v = xt.load_tile(xt.init_tile(y, [0, 0], [4, BLOCK]))
    r = v[None, :]  # error
    xt.store_tile(r, xt.init_tile(y, [0, 0], [4, BLOCK]))


@xd.jit
def reshape_count(x, BLOCK: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0], [BLOCK]))
    r = xt.reshape(v, [BLOCK * 2])  # error
    xt.store_tile(r, xt.init_tile(x, [0], [BLOCK]))


@xd.jit
def reshape_rows(x, y, BLOCK: xt.constexpr):
    v = xt.load_tile(xt.init_tile(y, [0, 0], [4, BLOCK]))
    r = xt.reshape(v, [2, BLOCK * 2])  # error
    xt.store_tile(r, xt.init_tile(y, [0, 0], [2, BLOCK * 2]))


@xd.jit
def axis_one_of_one_d(x, BLOCK: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0], [BLOCK]))
    s = xt.sum(v, axis=1)  # error
    xt.store_tile(s, xt.init_tile(x, [0], [1]))


@xd.jit
def two_deltas(x, BLOCK: xt.constexpr):
    t = xt.init_tile(x, [0], [BLOCK])
    t = xt.update_tile_offset(t, 0, BLOCK)  # error
    xt.store_tile(xt.load_tile(t), t)


@xd.jit
def rank_changes_in_loop(x, y, BLOCK: xt.constexpr):
    acc = xt.zeros([BLOCK], xt.float32)
    for _ in range(2):  # error
        acc = xt.load_tile(xt.init_tile(y, [0, 0], [1, BLOCK]))
    xt.store_tile(acc, xt.init_tile(x, [0], [BLOCK]))


@xd.jit
def order_on_one_d(x, BLOCK: xt.constexpr):
    t = xt.init_tile(x, [0], [BLOCK], order=(0, 1))  # error
    xt.store_tile(xt.load_tile(t), t)


@pytest.mark.parametrize("kernel, fragments", [
    (two_offsets, ("a 1-D array takes one offset, e.g. [pid * BLOCK]", "got 2 values")),
    (two_sizes, ("a 1-D array's tile takes one size, e.g. [BLOCK]",)),
    (row_of_a_row, ("v[None, :] indexes 1 dimension(s), but this is a 2-D tile value (4, 32)",
                    "v[:, None] and v[None, :] take a 1-D value")),
    (reshape_count, ("cannot reshape a value of shape (32,) (32 elements) into (64,) (64 elements)",)),
    (reshape_rows, ("only reshapes that add or drop size-1 dimensions are supported",)),
    (axis_one_of_one_d, ("axis must be 0 or None for a 1-D value (shape (32,)), got 1",)),
    (two_deltas, ("a 1-D tile moves by one delta",)),
    (rank_changes_in_loop, ("rank mismatch: 'acc' is 1-D before the loop but 2-D after an iteration",)),
    (order_on_one_d, ("order= is for tiles of 2-D arrays",)),
])
def test_misuse_is_a_located_error(kernel, fragments):
    lines, first = inspect.getsourcelines(kernel.fn)
    line = first + next(i for i, text in enumerate(lines) if "# error" in text)
    with pytest.raises(CompilationError) as info:
        xd.compile(kernel, {"x": "f32[:]", "y": "f32[:,:]"}, {"BLOCK": 32}, target="pvc")
    message = str(info.value)
    assert f"test_one_d.py:{line}:" in message, message
    for fragment in fragments:
        assert fragment in message, message


@xd.jit
def _row_sums_into_1d(x, out, BM: xt.constexpr, BN: xt.constexpr):
    s = xt.sum(xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN])), axis=1)   # a [BM, 1] column
    xt.store_tile(s, xt.init_tile(out, [0], [BM]))


def test_a_reduction_column_into_a_1d_tile_says_to_reshape():
    """Reductions keep their axis; storing the [BM, 1] column into a 1-D tile points at
    xt.reshape, with the shapes the user wrote."""
    with pytest.raises(CompilationError, match=r"test_one_d.py:\d+:\d+: error: store_tile: value shape \[16, 1\] "
                       r"does not match the tile shape \[16\]; .*xt.reshape\(v, \[16\]\)"):
        _row_sums_into_1d.on("interpret")[(1,)](np.zeros((16, 32), np.float32), np.zeros(16, np.float32),
                                                BM=16, BN=32)
