"""Masked block tiles end to end, on both CPU device flavours and the interpreter, against
numpy: ``load_tile(t, mask=, other=)`` reads masked-off elements as ``other`` (edge masks
and masks that are not edge masks, broadcast rows and columns, constant and runtime
``other``, with ``padding`` for kept elements outside the array), and
``store_tile(v, t, mask=)`` leaves masked-off memory untouched, also while another
program writes the neighbouring elements.  Copies only: every result is exact."""
from __future__ import annotations

import numpy as np
import pytest

from kernels.masked import half_rows, masked_copy, moved_store, slm_masked, softmax_rows, transposed_copy

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret"]
SENTINEL = 99


def _ref_copy(x, n_rows, n_cols, fill, BM, BN, load, store, other, pad, grid):
    """numpy's reading of masked_copy: the padded tiles, the load mask, the store mask."""
    R, C = grid[0] * BM, grid[1] * BN
    xp = np.full((R, C), pad, x.dtype)
    xp[:x.shape[0], :x.shape[1]] = x
    r, c = np.arange(R)[:, None], np.arange(C)[None, :]
    masks = {"cols": np.broadcast_to(c < n_cols, (R, C)), "rows": np.broadcast_to(r < n_rows, (R, C)),
             "both": (r < n_rows) & (c < n_cols), "positive": np.pad(x, ((0, R - x.shape[0]), (0, C - x.shape[1])),
                                                                       constant_values=0) > 0}
    other_value = fill if other == "scalar" else (0 if other is None else other)
    v = xp if load == "" else np.where(masks[load], xp, np.asarray(other_value).astype(x.dtype))
    keep = {"": np.ones((R, C), bool), "cols": masks["cols"], "rows": masks["rows"], "rows_triton": masks["rows"],
            "rows_swapped": np.broadcast_to((r < n_rows) & (r % BM + 2 < BM + n_cols), (R, C)),
            "general": (v > 0) | (c % BN % 3 == 0)}[store]
    out = np.full((R, C), SENTINEL, x.dtype)
    out[keep] = v[keep]
    return out[:x.shape[0], :x.shape[1]]


CASES = [  # load mask, store mask, other, padding
    ("cols", "", float("-inf"), 0),
    ("rows", "", "scalar", 0),
    ("both", "", None, -3),
    ("positive", "", float("-inf"), 0),     # not an edge mask
    ("cols", "cols", 7, 0),
    ("", "rows", None, 0),
    ("positive", "general", "scalar", 2),   # a general store mask: predicated lanes
]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("load,store,other,pad", CASES, ids=[f"{a or '-'}-{b or '-'}" for a, b, _, _ in CASES])
def test_masked_copy_f32(load, store, other, pad, flavour):
    BM, BN = 8, 32
    x = np.random.default_rng(1).standard_normal((20, 70)).astype(np.float32)
    x[x == 0] = 1
    y = np.full_like(x, SENTINEL)
    grid = (3, 3)  # the last tiles stick out of the array: its bounds and the masks both apply
    n_rows, n_cols, fill = 13, 45, -2.5
    masked_copy.on(flavour)[grid](x, y, n_rows, n_cols, fill, BM=BM, BN=BN, LOAD=load, STORE=store,
                                  OTHER=other, PAD=pad)
    np.testing.assert_array_equal(y, _ref_copy(x, n_rows, n_cols, fill, BM, BN, load, store, other, pad, grid))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("load,store,other", [("cols", "general", -5), ("positive", "rows", "scalar")])
def test_masked_copy_int32(load, store, other, flavour):
    BM, BN = 8, 32
    x = np.random.default_rng(2).integers(-50, 50, (16, 64)).astype(np.int32)
    y = np.full_like(x, SENTINEL)
    n_rows, n_cols, fill = 11, 40, -9
    masked_copy.on(flavour)[(2, 2)](x, y, n_rows, n_cols, fill, BM=BM, BN=BN, LOAD=load, STORE=store,
                                    OTHER=other, PAD=0)
    np.testing.assert_array_equal(y, _ref_copy(x, n_rows, n_cols, fill, BM, BN, load, store, other, 0, (2, 2)))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("BM", [1, 4])
def test_softmax_rows_masked_with_minus_inf(BM, flavour):
    M, N, BN = 10, 100, 128
    x = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32) * 4
    y = np.zeros_like(x)
    softmax_rows.on(flavour)[(-(-M // BM),)](x, y, N, BM=BM, BN=BN)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    # f32: x - max rounds (2^-24 R through exp, R the row's range), exp is 3 ulp for each
    # e_i, the N-term sum N 2^-24 more, the divide 2.5 ulp: relative (3R + N + 40) 2^-24
    spread = x.max(1, keepdims=True) - x.min(1, keepdims=True)
    assert np.all(np.abs(y - ref) <= ref * (3 * spread + N + 40) * 2.0 ** -24)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_two_programs_write_adjacent_halves_of_a_row(flavour):
    """Each program masks out the other's half of the same tile, 64 times over: with a
    read-modify-write one program would put back stale values of the other's half."""
    HALF, BM = 16, 8
    x = np.arange(BM * 2 * HALF, dtype=np.float32).reshape(BM, 2 * HALF)
    y = np.zeros_like(x)
    half_rows.on(flavour)[(2,)](x, y, HALF=HALF, BM=BM)
    ref = x + np.where(np.arange(2 * HALF) < HALF, 1, 2).astype(np.float32)
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_masked_store_through_a_moved_tile(flavour):
    BM, BN = 8, 32
    x = np.arange(BM * BN, dtype=np.float32).reshape(BM, BN) + 1
    y = np.zeros((2 * BM, 2 * BN), np.float32)
    moved_store.on(flavour)[(1,)](x, y, 50, BM=BM, BN=BN)
    ref = np.zeros_like(y)
    ref[BM:, BN:50] = x[:, :50 - BN]
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_masked_copy_f16_general_masks(flavour):
    """16-bit elements: the per-lane stores write 2 bytes each (no neighbour touched)."""
    BM, BN = 8, 32
    x = np.random.default_rng(4).standard_normal((20, 70)).astype(np.float16)
    x[x == 0] = 1
    y = np.full_like(x, SENTINEL)
    masked_copy.on(flavour)[(3, 3)](x, y, 13, 45, -2.5, BM=BM, BN=BN, LOAD="positive", STORE="general",
                                    OTHER=float("-inf"), PAD=0)
    ref = _ref_copy(x, 13, 45, -2.5, BM, BN, "positive", "general", float("-inf"), 0, (3, 3))
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_masks_on_transposed_tiles(flavour):
    """order=(0, 1) views: the masks are in the view's rows and columns."""
    BM, BN, n = 16, 32, 20
    x = np.arange(BN * BM, dtype=np.float32).reshape(BN, BM) + 1   # viewed as x^T, [BM, BN]
    y = np.zeros_like(x)
    transposed_copy.on(flavour)[(1,)](x, y, n, BM=BM, BN=BN)
    ref = np.zeros((BM, BN), np.float32)
    ref[:n - 2] = np.where(np.arange(BN)[None, :] < n, x.T, -1)[:n - 2]
    np.testing.assert_array_equal(y.T, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_masked_store_into_shared_local_memory(flavour):
    x = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    y = np.zeros_like(x)
    slm_masked.on(flavour)[(1,)](x, y, 20, BM=8, BN=32)
    np.testing.assert_array_equal(y, np.where(np.arange(32) < 20, x, -1))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("n_rows,n_cols", [(13, 45), (0, 45), (-5, 45), (21, -4)])
def test_row_edge_store_masks_keep_the_kept_rows_only(n_rows, n_cols, flavour):
    """Row edge masks (``<``, and ``>=`` written the other way round, and'ed) store with a
    shrunk row extent: no row past the bound is written, also when no row is kept at all
    (n_rows <= 0: the tile's extent becomes one row, below the tile)."""
    BM, BN = 8, 32
    x = np.random.default_rng(5).standard_normal((20, 70)).astype(np.float32)
    y = np.full_like(x, SENTINEL)
    for store in ("rows", "rows_triton", "rows_swapped"):
        y[:] = SENTINEL
        masked_copy.on(flavour)[(3, 3)](x, y, n_rows, n_cols, 0.0, BM=BM, BN=BN, LOAD="", STORE=store,
                                        OTHER=None, PAD=0)
        ref = _ref_copy(x, n_rows, n_cols, 0.0, BM, BN, "", store, None, 0, (3, 3))
        np.testing.assert_array_equal(y, ref, err_msg=store)
