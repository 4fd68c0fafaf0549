"""load_tile padding on order=[0, 1] (transposed) tiles and load_gather padding (RFC:
out-of-bounds elements / masked-off lanes read the padding value), on the CPU device in
both flavours (cpu-pvc: transposed 2D block reads for operand B, per-lane transposed
gathers otherwise; cpu-arc: per-lane loads) against numpy and the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

FLAVOURS = ["pvc", "arc"]
DTYPES = [np.float32, np.float16, np.int32]


def _pad_value(dtype) -> float | int:
    return -7.5 if np.issubdtype(dtype, np.floating) else -7


# --- order = [0, 1] tiles -------------------------------------------------------------------
@xd.jit
def pad_copy_transposed(xs, y, BM: xt.constexpr, BN: xt.constexpr, PAD: xt.constexpr):
    """``y`` = BM x BN tiles of ``xs^T`` (an order=(0, 1) view of the row-major ``xs``);
    elements outside ``xs`` read PAD."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    v = xt.load_tile(xt.init_tile(xs, [m, n], [BM, BN], order=(0, 1)), padding=PAD)
    xt.store_tile(v, xt.init_tile(y, [m, n], [BM, BN]))


@xd.jit
def pad_matmul_t(x, y, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, WHICH: xt.constexpr):
    """C = A @ B with one operand given transposed (WHICH "a": x = A^T [K, M], y = B;
    "b": x = A, y = B^T [N, K]), both loaded with padding 1: each out-of-bounds k adds 1."""
    pm = xt.program_id(0) * BM
    pn = xt.program_id(1) * BN
    if WHICH == "a":
        ta = xt.init_tile(x, [pm, 0], [BM, BK], order=(0, 1))
        tb = xt.init_tile(y, [0, pn], [BK, BN])
    else:
        ta = xt.init_tile(x, [pm, 0], [BM, BK])
        tb = xt.init_tile(y, [0, pn], [BK, BN], order=(0, 1))
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta, padding=1.0), xt.load_tile(tb, padding=1.0), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pm, pn], [BM, BN]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transposed_tile_padding(flavour, dtype):
    """xs is 40 x 20 (so xs^T is 20 x 40): a 2 x 2 grid of 16 x 32 tiles of xs^T reads
    out of bounds in both dimensions (rows 20..31, columns 40..63)."""
    xs = ((np.arange(40 * 20) % 89) - 40).reshape(40, 20).astype(dtype)
    y = np.zeros((32, 64), dtype)
    pad = _pad_value(dtype)
    pad_copy_transposed.on(f"cpu-{flavour}")[(2, 2)](xs, y, BM=16, BN=32, PAD=pad)
    ref = np.full(y.shape, pad, dtype)
    ref[:20, :40] = xs.T
    np.testing.assert_array_equal(y, ref)
    interp = np.zeros_like(y)
    pad_copy_transposed.on("interpret")[(2, 2)](xs, interp, BM=16, BN=32, PAD=pad)
    np.testing.assert_array_equal(interp, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("which", ["a", "b"])
def test_transposed_mma_operand_padding_with_out_of_bounds_k(flavour, which):
    """K = 40 with BK = 32: the second K step reads 24 padded k of the transposed operand
    (on pvc a B^T block is one transposed 2D block read, then the padding select)."""
    M, N, K, BK = 48, 64, 40, 32
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    x, y = (np.ascontiguousarray(a.T), b) if which == "a" else (a, np.ascontiguousarray(b.T))
    c = np.zeros((M, N), np.float32)
    BM, BN = (32, 32) if flavour == "pvc" else (16, 16)
    grid = ((M + BM - 1) // BM, N // BN)
    pad_matmul_t.on(f"cpu-{flavour}")[grid](x, y, c, K, BM=BM, BN=BN, BK=BK, WHICH=which)
    ref = a.astype(np.float32) @ b.astype(np.float32) + (-K % BK)
    np.testing.assert_array_equal(c, ref)
    interp = np.zeros_like(c)
    pad_matmul_t.on("interpret")[grid](x, y, interp, K, BM=BM, BN=BN, BK=BK, WHICH=which)
    np.testing.assert_array_equal(interp, ref)


def test_transposed_padding_rides_on_the_transposed_load():
    """XeGPU: the padding is an attribute of every transposed load_nd (no error any more);
    pvc's codegen keeps the d32t block read for B^T and adds the select wrapper."""
    sig = {"x": "f16[:,:]", "y": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    kernel = xd.compile(pad_matmul_t, sig, {"BM": 32, "BN": 32, "BK": 32, "WHICH": "b"}, target="cpu-pvc")
    loads = [ln for ln in kernel.asm["xegpu"].splitlines() if "xegpu.load_nd" in ln and "transpose" in ln]
    assert loads and all("padding = 1.0" in ln for ln in loads)
    assert "__xetile_pad2d_transposed_" in kernel.asm["llvm"]
    assert "read_transpose" in kernel.asm["llvm"]


# --- load_gather ----------------------------------------------------------------------------
@xd.jit
def gather_pad(src, idx, out, R: xt.constexpr, C: xt.constexpr, PAD: xt.constexpr):
    """out = src.flat[idx] where idx < 50, else PAD."""
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    v = xt.load_gather(xt.init_tile(src, i), i < 50, padding=PAD)
    xt.store_tile(v, xt.init_tile(out, [0, 0], [R, C]))


@xd.jit
def gather_pad_scaled(src, idx, out, C: xt.constexpr, PAD: xt.constexpr):
    """One row: out = 2 * gather + 1, masked-off lanes PAD before the arithmetic."""
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [1, C]))
    v = xt.load_gather(xt.init_tile(src, i), i % 3 != 0, padding=PAD)
    xt.store_tile(v * 2 + 1, xt.init_tile(out, [0, 0], [1, C]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_padding_on_masked_lanes(flavour, dtype):
    rng = np.random.default_rng(41)
    src = (rng.integers(-50, 50, (8, 8))).astype(dtype)
    idx = rng.integers(0, 64, (4, 32)).astype(np.int32)
    out = np.zeros((4, 32), dtype)
    pad = _pad_value(dtype)
    gather_pad.on(f"cpu-{flavour}")[(1,)](src, idx, out, R=4, C=32, PAD=pad)
    ref = np.where(idx < 50, src.reshape(-1)[idx], np.array(pad, dtype))
    assert (idx >= 50).any() and (idx < 50).any()
    np.testing.assert_array_equal(out, ref)
    interp = np.zeros_like(out)
    gather_pad.on("interpret")[(1,)](src, idx, interp, R=4, C=32, PAD=pad)
    np.testing.assert_array_equal(interp, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_gather_padding_feeds_arithmetic(flavour):
    src = np.arange(64, dtype=np.float32) / 4
    idx = np.random.default_rng(43).integers(0, 64, (1, 32)).astype(np.int32)
    out = np.zeros((1, 32), np.float32)
    gather_pad_scaled.on(f"cpu-{flavour}")[(1,)](src.reshape(8, 8), idx, out, C=32, PAD=float("inf"))
    ref = np.where(idx % 3 != 0, src[idx], np.inf) * 2 + 1
    np.testing.assert_array_equal(out, ref)


# --- a transpose of a padded load folds into the load ----------------------------------------
@xd.jit
def pad_then_transpose(x, y, M: xt.constexpr, N: xt.constexpr, PAD: xt.constexpr):
    """y[0:N, 0:M] = (x[0:M, 0:N] padded with PAD)^T: the transpose becomes an order=(0, 1)
    load that keeps the padding (no SLM round trip)."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [M, N]), padding=PAD)
    xt.store_tile(xt.transpose(v), xt.init_tile(y, [0, 0], [N, M]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_of_a_padded_load_folds_into_the_load(flavour, dtype):
    # x inside a 32 x 64 window; rows of >= 64 bytes (pvc reads it with transposed 2D blocks)
    x = ((np.arange(20 * 40) % 83) - 30).reshape(20, 40).astype(dtype)
    y = np.zeros((64, 32), dtype)
    pad = _pad_value(dtype)
    sig = {"x": f"{np.dtype(dtype).name.replace('float', 'f').replace('int', 'i')}[:,:]"}
    sig["y"] = sig["x"]
    kernel = xd.compile(pad_then_transpose, sig, {"M": 32, "N": 64, "PAD": pad}, target=f"cpu-{flavour}")
    assert "memref.alloc" not in kernel.asm["xegpu"] and "transpose = array<i64: 1, 0>" in kernel.asm["xegpu"]
    pad_then_transpose.on(f"cpu-{flavour}")[(1,)](x, y, M=32, N=64, PAD=pad)
    ref = np.full((32, 64), pad, dtype)
    ref[:20, :40] = x
    np.testing.assert_array_equal(y, ref.T)
