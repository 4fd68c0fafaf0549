"""A ``[1, N]`` row transposed into an ``[N, 1]`` column (and back), then broadcast: the
causal-mask index ``j - i``, a row of scales applied per row of a tile, a row reduction and a
loaded column turned into rows.  The transposed column is replicated in every lane: before the fix its
transposed load from the staging buffer got the row lane layout and the SIMT stage failed
(an internal ``sg_map ... does not divide tensor [1, N]``) on both lane layouts, and a
loaded ``[N, 1]`` column read transposed (one element per lane) was read as a replicated
column (invalid LLVM IR).

Reference: numpy on the same values; every result is a small integer (indices, products
and sums of integers in [-4, 4]), exact in int32 and float32."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

DTYPES = {"int32": (xt.int32, np.int32), "float32": (xt.float32, np.float32)}


@xd.jit
def row_column(a, b, x, mask, scaled, sums, N: xt.constexpr, DT: xt.constexpr):
    """mask = j - i ([N, 16]), scaled = x * a^T ([N, 16]), sums = rowsum(x)^T + b^T
    broadcast down 16 rows ([16, N]); ``a`` is a [1, N] row, ``b`` an [N, 1] column."""
    i = xt.transpose(xt.arange(0, N, DT))
    j = xt.arange(0, 16, DT)
    xt.store_tile(j - i, xt.init_tile(mask, [0, 0], [N, 16]))
    row = xt.load_tile(xt.init_tile(a, [0, 0], [1, N]))
    v = xt.load_tile(xt.init_tile(x, [0, 0], [N, 16]))
    xt.store_tile(v * xt.transpose(row), xt.init_tile(scaled, [0, 0], [N, 16]))
    s = xt.transpose(xt.sum(v, axis=1)) + xt.transpose(xt.load_tile(xt.init_tile(b, [0, 0], [N, 1])))
    xt.store_tile(s + xt.zeros([16, N], DT), xt.init_tile(sums, [0, 0], [16, N]))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("n, dtype", [(8, "int32"), (16, "float32"), (32, "int32"), (64, "float32")])
def test_row_to_column_broadcasts(target, n, dtype):
    dt, np_dt = DTYPES[dtype]
    rng = np.random.default_rng(n)
    a = rng.integers(-4, 5, (1, n)).astype(np_dt)
    b = rng.integers(-4, 5, (n, 1)).astype(np_dt)
    x = rng.integers(-4, 5, (n, 16)).astype(np_dt)
    mask, scaled = np.full((n, 16), 99, np_dt), np.full((n, 16), 99, np_dt)
    sums = np.full((16, n), 99, np_dt)
    row_column.on(target)[(1,)](a, b, x, mask, scaled, sums, N=n, DT=dt)
    np.testing.assert_array_equal(mask, np.arange(16)[None, :] - np.arange(n)[:, None])
    np.testing.assert_array_equal(scaled, x * a.T)
    np.testing.assert_array_equal(sums, np.broadcast_to(x.sum(1)[None, :] + b.T, (16, n)))


@xd.jit
def same_block_two_arrays(x, wide, narrow):
    """One 8x16 block stored to an array wide enough for 2D blocks and to one whose rows are
    too narrow (per-lane stores): on lanes without 2D block writes both store wrappers are
    the same per-lane function."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v, xt.init_tile(wide, [0, 0], [8, 16]))
    xt.store_tile(v, xt.init_tile(narrow, [0, 0], [8, 16]))


def test_per_lane_and_plain_store_of_one_block():
    """Was a raw ``ValueError: ... is already defined in this module`` on cpu-arc."""
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    wide, narrow = np.zeros((8, 16), np.float32), np.zeros((8, 8), np.float32)
    same_block_two_arrays.on("cpu-arc")[(1,)](x, wide, narrow)
    np.testing.assert_array_equal(wide, x)
    np.testing.assert_array_equal(narrow, x[:, :8])
