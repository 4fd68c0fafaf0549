"""Tile offsets beyond 32 bits never wrap.

An int argument that does not fit i32 is passed as i64; tile descriptors hold 32-bit
positions, and used to get the offset truncated: a tile at row ``2**32 + 2`` read row 2
and a store there overwrote row 2.  Now such a kernel keeps 64-bit positions and
saturates them per message (codegen/coordinates.py): far tiles read padding and write
nothing, and moving a far tile back with ``update_tile_offset`` reaches the exact rows.
Compared with a numpy reference on the CPU device (PVC and ARC flavours) and in the
interpreter, with small arrays: only offsets are large.  Arrays whose extents the 32-bit
descriptors cannot hold are refused at launch, before anything runs."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import LaunchError
from kernels.scattered import gather_kernel
from xetile_dsl.runtime.abi import MAX_TILED_EXTENT

LANES = {"cpu": 16, "cpu-arc": 8, "interpret": 16}
X_ROWS, OUT_ROWS = 20, 64
FILL = 7.0


@xd.jit
def far_tiles(x, y, row0, col0, back, W: xt.constexpr):
    """``y`` rows 0-15: ``x`` at (row0, col0); 16-31: that tile moved ``back`` rows;
    32-47: ``x`` at (row0 - 2**32, col0) (a constant beyond i32); a FILL tile is stored
    at row ``row0 + 48`` of ``y``.  Padding -1."""
    t = xt.init_tile(x, [row0, col0], [16, W])
    xt.store_tile(xt.load_tile(t, padding=-1.0), xt.init_tile(y, [0, 0], [16, W]))
    t = xt.update_tile_offset(t, back, 0)
    xt.store_tile(xt.load_tile(t, padding=-1.0), xt.init_tile(y, [16, 0], [16, W]))
    near = xt.init_tile(x, [row0 - 4294967296, col0], [16, W])
    xt.store_tile(xt.load_tile(near, padding=-1.0), xt.init_tile(y, [32, 0], [16, W]))
    xt.store_tile(xt.full([16, W], FILL, xt.float32), xt.init_tile(y, [row0 + 48, 0], [16, W]))


def _tile_at(x, row, col, w):
    """numpy: the 16 x w window of ``x`` at (row, col), -1 outside ``x``."""
    out = np.full((16, w), -1.0, np.float32)
    rows = np.arange(row, row + 16)[:, None]
    cols = np.arange(col, col + w)[None, :]
    inside = (rows >= 0) & (rows < x.shape[0]) & (cols >= 0) & (cols < x.shape[1])
    out[inside] = x[np.broadcast_to(rows, inside.shape)[inside], np.broadcast_to(cols, inside.shape)[inside]]
    return out


def _far_tiles_reference(x, row0, col0, back, w):
    y = np.zeros((OUT_ROWS, w), np.float32)
    y[0:16] = _tile_at(x, row0, col0, w)
    y[16:32] = _tile_at(x, row0 + back, col0, w)
    y[32:48] = _tile_at(x, row0 - 2**32, col0, w)
    rows = np.arange(row0 + 48, row0 + 64)
    y[rows[(rows >= 0) & (rows < OUT_ROWS)]] = FILL
    return y


CASES = {
    # a tile 2**32 rows down reads padding, stores nothing; moved back it reads rows 2..17
    "row 2**32+2": (2**32 + 2, 0, -(2**32)),
    # the same above the array: the wrapped rows would be 2.. (the store: row 50); moved
    # back: rows 18, 19 and padding
    "row -2**32+2": (-(2**32) + 2, 0, 2**32 + 16),
    # a column 2**32 + 1 to the right: padding (it wrapped to column 1)
    "col 2**32+1": (3, 2**32 + 1, 0),
}


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
@pytest.mark.parametrize("case", list(CASES))
def test_offsets_beyond_32_bits_match_numpy(target, case):
    row0, col0, back = CASES[case]
    w = LANES[target]
    x = np.arange(X_ROWS * w, dtype=np.float32).reshape(X_ROWS, w) + 1.0   # distinct, never -1 or 0
    y = np.zeros((OUT_ROWS, w), np.float32)
    far_tiles.on(target)[(1,)](x, y, row0, col0, back, W=w)
    np.testing.assert_array_equal(y, _far_tiles_reference(x, row0, col0, back, w))


@xd.jit
def carried_far_tile(x, y, row0, step, W: xt.constexpr):
    """A far tile carried through a loop: ``y`` rows 16i.. = ``x`` at row ``row0 + i*step``."""
    t = xt.init_tile(x, [row0, 0], [16, W])
    u = xt.init_tile(y, [0, 0], [16, W])
    for i in range(3):
        xt.store_tile(xt.load_tile(t, padding=-1.0), u)
        t = xt.update_tile_offset(t, step, 0)
        u = xt.update_tile_offset(u, 16, 0)


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_far_tile_carried_through_a_loop(target):
    """Rows 2**32 + 2, 2, -2**32 + 2: padding, x[2:18], padding (wrapped: x[2:18] thrice)."""
    w = LANES[target]
    x = np.arange(X_ROWS * w, dtype=np.float32).reshape(X_ROWS, w) + 1.0
    y = np.zeros((48, w), np.float32)
    carried_far_tile.on(target)[(1,)](x, y, 2**32 + 2, -(2**32), W=w)
    want = np.concatenate([_tile_at(x, 2**32 + 2, 0, w), _tile_at(x, 2, 0, w), _tile_at(x, -(2**32) + 2, 0, w)])
    np.testing.assert_array_equal(y, want)


@xd.jit
def wide_scalars(out, n, k, W: xt.constexpr):
    """i64 scalar arithmetic (not addresses) stored as int64 rows."""
    xt.store_tile(xt.full([1, W], n * 3 - 1, xt.int64), xt.init_tile(out, [0, 0], [1, W]))
    xt.store_tile(xt.full([1, W], n // 7 + k, xt.int64), xt.init_tile(out, [1, 0], [1, W]))
    xt.store_tile(xt.full([1, W], (n - 4294967296) * k, xt.int64), xt.init_tile(out, [2, 0], [1, W]))
    xt.store_tile(xt.full([1, W], n, xt.int64) + k, xt.init_tile(out, [3, 0], [1, W]))


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_i64_scalar_arithmetic_stays_64_bit(target):
    """A guard (this already held): i64 values outside addresses are never narrowed."""
    w = LANES[target]
    n, k = 2**40 + 12345, -7
    out = np.zeros((4, w), np.int64)
    wide_scalars.on(target)[(1,)](out, n, k, W=w)
    want = np.array([n * 3 - 1, n // 7 + k, (n - 2**32) * k, n + k], np.int64)
    np.testing.assert_array_equal(out, np.repeat(want[:, None], w, axis=1))


@xd.jit
def copy_from_row(x, y, row0, K, W: xt.constexpr):
    """``y`` = ``x`` from row ``row0`` on, 16 rows per iteration of a loop to ``K``."""
    t = xt.init_tile(x, [row0, 0], [16, W])
    u = xt.init_tile(y, [0, 0], [16, W])
    for k in range(0, K, 16):
        xt.store_tile(xt.load_tile(t), u)
        t = xt.update_tile_offset(t, 16, 0)
        u = xt.update_tile_offset(u, 16, 0)


def test_i32_offsets_keep_32_bit_descriptors():
    """The fast path is unchanged: with i32 offsets no saturation (its bound 2**30)
    reaches the LLVM IR; an i64 loop bound that no offset depends on keeps it too; an
    i64 row makes the positions 64-bit."""
    sig = {"x": "f32[:,:]", "y": "f32[:,:]", "row0": "i32", "K": "i32"}

    def llvm(**types):
        return xd.compile(copy_from_row, signature={**sig, **types}, constants={"W": 16}, target="cpu").asm["llvm"]

    bound = str(MAX_TILED_EXTENT)
    narrow = llvm()
    assert bound not in narrow and " = sext i32" in narrow
    assert bound not in llvm(K="i64")
    assert bound in llvm(row0="i64")


def test_array_too_large_for_tiles_is_refused_before_launch():
    """2**30 + 16 rows (a broadcast view: no memory) cannot be addressed by 32-bit
    descriptors: a LaunchError names the argument and the limit, and nothing runs."""
    x = np.broadcast_to(np.ones((1, 16), np.float32), (MAX_TILED_EXTENT + 16, 16))
    y = np.zeros((OUT_ROWS, 16), np.float32)
    with pytest.raises(LaunchError, match=r"'x'.*rows.*2\*\*30"):
        far_tiles.on("cpu")[(1,)](x, y, 2**32 + 2, 0, -(2**32), W=16)
    assert not y.any()


def test_only_tiled_arrays_are_bounded():
    """The limit is for arrays reached through tile descriptors: a gathered-from array
    (64-bit per-lane offsets) is not marked."""
    k = xd.compile(gather_kernel, signature={"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]", "n": "i32"},
                   constants={"N": 16}, target="cpu")
    tiled = {p.name: p.tiled for p in k.abi.params if p.kind == "array"}
    assert tiled == {"src": False, "idx": True, "out": True}
