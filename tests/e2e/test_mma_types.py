"""tile_mma for int8/uint8 (-> i32) and tf32 (f32 tiles, -> f32, PVC only) on the CPU
device, in the PVC and ARC flavours, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels.matmul import matmul_acc_kernel
from tf32_ref import tf32_matmul_ref

INT_RANGES = {"i8": (np.int8, -128, 128), "u8": (np.uint8, 0, 256)}


def _run(a, b, c, flavour, tiles, acc):
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = tiles
    grid = ((M + BM - 1) // BM, (N + BN - 1) // BN)
    matmul_acc_kernel.on(f"cpu-{flavour}")[grid](a, b, c, K, BM=BM, BN=BN, BK=BK, ACC=acc)
    return c


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("ta,tb", [("i8", "i8"), ("u8", "u8"), ("u8", "i8"), ("i8", "u8")])
def test_int8_mma_is_exact(ta, tb, flavour):
    """Full-range 8-bit inputs: i32 sums are exact; 130x90x100 also checks the edges."""
    M, N, K = 130, 90, 100
    rng = np.random.default_rng(len(ta + tb) + (flavour == "arc"))
    (da, lo_a, hi_a), (db, lo_b, hi_b) = INT_RANGES[ta], INT_RANGES[tb]
    a = rng.integers(lo_a, hi_a, (M, K)).astype(da)
    b = rng.integers(lo_b, hi_b, (K, N)).astype(db)
    c = np.full((M, N), -7, np.int32)
    tiles = (32, 32, 64) if flavour == "pvc" else (16, 16, 32)
    _run(a, b, c, flavour, tiles, xt.int32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("tiles", [(32, 32, 32), (16, 32, 64)])
def test_tf32_mma_matches_numpy(tiles):
    M, N, K = 96, 64, 128
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = _run(a, b, np.zeros((M, N), np.float32), "pvc", tiles, xt.float32)
    ref, f32_error = tf32_matmul_ref(a, b)  # inputs rounded to tf32 like the matrix engine
    np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error)
    assert np.abs(c - a.astype(np.float64) @ b).max() > 10 * f32_error  # the rounding is visible


def test_tf32_cpu_device_and_interpreter_round_alike():
    """Inputs with bits below tf32's mantissa (ties included): the CPU device's DPAS and the
    interpreter both round them to nearest even, so both match the rounded reference."""
    M, N, K = 32, 32, 64
    rng = np.random.default_rng(11)
    base = rng.integers(-64, 64, (M + N, K)).astype(np.float32) / 32  # few significant bits
    low_bits = rng.choice([0x0FFF, 0x1000, 0x1001, 0x0800, 0x1FFF], size=base.shape).astype(np.uint32)
    noisy = (base.view(np.uint32) | np.where(base != 0, low_bits, 0).astype(np.uint32)).view(np.float32)
    a, b = noisy[:M], np.ascontiguousarray(noisy[M:].T)
    ref, f32_error = tf32_matmul_ref(a, b)
    for target in ("cpu-pvc", "interpret"):
        c = np.zeros((M, N), np.float32)
        matmul_acc_kernel.on(target)[(1, 1)](a, b, c, K, BM=32, BN=32, BK=32, ACC=xt.float32)
        np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error, err_msg=target)


def test_tf32_small_integers_exact():
    a = np.random.default_rng(4).integers(-8, 8, (64, 48)).astype(np.float32)
    b = np.random.default_rng(5).integers(-8, 8, (48, 32)).astype(np.float32)
    c = _run(a, b, np.zeros((64, 32), np.float32), "pvc", (32, 32, 32), xt.float32)  # BK=32: known PVC-flavour BK=16 loop bug
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("target", ["arc", "cpu-arc"])
def test_tf32_on_arc_is_a_clear_error(target):
    sig = {"a": "f32[:,:]", "b": "f32[:,:]", "c": "f32[:,:]", "K": "i32"}
    with pytest.raises(CompilationError) as info:
        xd.compile(matmul_acc_kernel, sig, {"BM": 16, "BN": 16, "BK": 16, "ACC": xt.float32}, target=target)
    text = str(info.value)
    assert "tf32" in text and "arc does not have" in text and "f16 or bf16" in text
    assert "xt.tile_mma(" in text  # points at the user's line


def test_int8_wrong_accumulator_is_reported():
    sig = {"a": "i8[:,:]", "b": "i8[:,:]", "c": "f32[:,:]", "K": "i32"}
    with pytest.raises(CompilationError, match="cannot accumulate in f32.*i32"):
        xd.compile(matmul_acc_kernel, sig, {"BM": 32, "BN": 32, "BK": 32, "ACC": xt.float32}, target="pvc")
