"""One-row tiles of 2-D arrays (``xt.init_tile(x, [r, c], [1, BLOCK])``: a norm weight
stored ``[1, N]``, a row of a matrix) on the CPU device, PVC and ARC flavours, and in the
interpreter, against numpy. On targets with 2D block IO they are one-row 2D block
messages (tests/isa/test_one_d_isa.py), bounded by the surface like any block: a ragged
last column block and a row past the last are read as 0 and never written."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret"]


@xd.jit
def scale_rows(x, w, out, BLOCK: xt.constexpr):
    """out[r, c:c+BLOCK] = x[r, c:c+BLOCK] * w[0, c:c+BLOCK] + 1, one row per program."""
    r = xt.program_id(0)
    c = xt.program_id(1) * BLOCK
    v = xt.load_tile(xt.init_tile(x, [r, c], [1, BLOCK]))
    s = xt.load_tile(xt.init_tile(w, [0, c], [1, BLOCK]))
    xt.store_tile(v * s + 1, xt.init_tile(out, [r, c], [1, BLOCK]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_rows_of_2d_arrays(flavour, dtype):
    """N = 200 columns in blocks of 64: the last block is ragged; the grid has one row
    more than x, whose program reads zeros and writes nothing (out's columns past N and
    its last row stay at the sentinel: out is a view of a larger array). Small integers
    in f16 and f32: every product and sum is exact."""
    rng = np.random.default_rng(0)
    M, N, BLOCK = 5, 200, 64
    x = rng.integers(-4, 5, (M, N)).astype(dtype)
    w = rng.integers(-3, 4, (1, N)).astype(dtype)
    full = np.full((M + 1, N + 24), 7, dtype)
    out = full[:M, :N]
    scale_rows.on(flavour)[(M + 1, -(-N // BLOCK))](x, w, out, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x * w + 1)
    assert (full[:, N:] == 7).all() and (full[M] == 7).all()
