"""The workgroup-level GEMM (Appendix 2.1 maps derived from the tile sizes) in f16, bf16,
tf32 (f32 inputs, PVC only) and int8/uint8 (i32 accumulators) on the CPU device, in the
PVC and ARC flavours, against numpy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels.gemm_wg import gemm_wg, gemm_wg_kernel
from tf32_ref import tf32_matmul_ref

FLOATS = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}
INTS = {"i8": (np.int8, -128, 128), "u8": (np.uint8, 0, 256)}


CASES = [(dt, fl) for dt in ("f16", "bf16", "f32", "i8", "u8") for fl in ("pvc", "arc")
         if not (dt == "f32" and fl == "arc")]  # tf32 is PVC only; the ARC error is tested below


@pytest.mark.parametrize("dt,flavour", CASES)
def test_wg_gemm_matches_numpy(dt, flavour):
    """64x64 workgroup tiles, sg_layout [4, 2] (16x32 per subgroup); two workgroups per
    dimension, several K steps; C prefilled so an unwritten piece shows."""
    M, N, K = 128, 128, 128
    rng = np.random.default_rng(CASES.index((dt, flavour)))
    if dt in INTS:
        d, lo, hi = INTS[dt]
        a, b = rng.integers(lo, hi, (M, K)).astype(d), rng.integers(lo, hi, (K, N)).astype(d)
        c = gemm_wg(a, b, np.full((M, N), -7, np.int32), target=f"cpu-{flavour}")
        np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))  # full range: exact in i32
    else:
        a = rng.integers(-4, 5, (M, K)).astype(FLOATS[dt])
        b = rng.integers(-4, 5, (K, N)).astype(FLOATS[dt])
        c = gemm_wg(a, b, np.full((M, N), np.nan, np.float32), target=f"cpu-{flavour}")
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))  # small integers: exact


@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_wg_gemm_coalesced_messages_at_the_edges(dt):
    """Tiles crossing every edge (M, N, K not multiples of 64, 64, BK): f16 A is read in
    16-row two-block messages, tf32 A (f32) in 16-row two-block 8-wide ones, B in 32-row
    VNNI / 16-row messages (lowering/rewrites/block_messages.py); outside the arrays they read 0 as
    one message per block did.  Small integers: exact."""
    M, N, K = 72, 80, 40
    rng = np.random.default_rng(31 if dt == "f16" else 32)
    a = rng.integers(-4, 5, (M, K)).astype(FLOATS[dt])
    b = rng.integers(-4, 5, (K, N)).astype(FLOATS[dt])
    c = gemm_wg(a, b, np.full((M, N), np.nan, np.float32), target="cpu-pvc")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_wg_gemm_tf32_random_matches_numpy():
    """Random f32 inputs on the tf32 DPAS: inputs rounded to tf32, f32 accumulation; [2, 2] layout."""
    M = N = K = 64
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    c = gemm_wg(a, b, target="cpu-pvc", SM=2, SN=2)
    ref, f32_error = tf32_matmul_ref(a, b)
    np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error)


def test_wg_gemm_rfc_256_tiles_f16():
    """The RFC's 256x256 workgroup tile with sg_layout [8, 4] (32x64 per subgroup)."""
    M = N = 256
    K = 64
    rng = np.random.default_rng(8)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = gemm_wg(a, b, target="cpu-pvc", BM=256, BN=256, SM=8, SN=4)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("target", ["arc", "cpu-arc"])
def test_wg_tf32_on_arc_is_a_clear_error(target):
    sig = {"a": "f32[:,:]", "b": "f32[:,:]", "c": "f32[:,:]", "K": "i32"}
    consts = {"BM": 64, "BN": 64, "BK": 16, "SM": 4, "SN": 2, "PF": 2, "ACC": xt.float32}
    with pytest.raises(CompilationError) as info:
        xd.compile(gemm_wg_kernel, sig, consts, target=target)
    text = str(info.value)
    assert "tf32" in text and "arc does not have" in text and "f16 or bf16" in text
    assert "xt.tile_mma(" in text  # points at the user's line


def test_wg_int8_wrong_accumulator_is_reported():
    sig = {"a": "i8[:,:]", "b": "i8[:,:]", "c": "f32[:,:]", "K": "i32"}
    consts = {"BM": 64, "BN": 64, "BK": 64, "SM": 4, "SN": 2, "PF": 2, "ACC": xt.float32}
    with pytest.raises(CompilationError, match="cannot accumulate in f32.*i32"):
        xd.compile(gemm_wg_kernel, sig, consts, target="pvc")
