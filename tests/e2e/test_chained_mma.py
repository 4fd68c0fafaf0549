"""A tile_mma consuming another tile_mma's result (back-to-back GEMM, the attention
pattern): exact on the PVC and ARC flavours and in the interpreter. On ARC the 8x8 result
blocks are re-laid out into 8x16 operand A blocks with subgroup shuffles
(lowering/rewrites/mma_relayout.py); the SLM round trip stays a valid way too. A result feeding
operand B is stacked into B blocks (no lane moves) on both targets. 8-bit operand A
chains, which PVC cannot run in registers either, are the same located error on both."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError

from .chained_mma_kernels import chained_int8_kernel, chained_into_b_kernel, chained_kernel, chained_through_slm_kernel

BM, BN, BK = 16, 32, 32
DTYPES = {"f16": (np.float16, xt.float16), "bf16": (ml_dtypes.bfloat16, xt.bfloat16)}


def _operands(bm=BM, bn=BN, bk=BK, dtype=np.float16):
    rng = np.random.default_rng(bm * 100 + bn + bk)
    a = rng.integers(-2, 3, (bm, bk)).astype(dtype)
    b = rng.integers(-2, 3, (bk, bn)).astype(dtype)
    d = rng.integers(-2, 3, (bn, bk)).astype(dtype)
    # small integers: the first product (|s| <= 4 * BK = 128) is exact in f16 and in bf16
    # (integers up to 256), so the chained result (|o| <= 128 * 2 * BN) is exact in f32
    # and equality is the reference
    f32 = [x.astype(np.float32) for x in (a, b, d)]
    return a, b, d, (f32[0] @ f32[1]) @ f32[2]


def _run(kernel, flavour, bm, bn, bk, dtype="f16"):
    a, b, d, ref = _operands(bm, bn, bk, DTYPES[dtype][0])
    c = np.zeros((bm, bk), np.float32)
    kernel.on(flavour)[(1,)](a, b, d, c, BM=bm, BN=bn, BK=bk, T=DTYPES[dtype][1])
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("flavour,bm,bn,bk", [
    ("cpu-arc", 8, 16, 16), ("cpu-arc", 16, 32, 32), ("cpu-arc", 32, 64, 16),
    ("cpu-pvc", 8, 16, 16), ("cpu-pvc", 32, 64, 16),
    ("interpret", 8, 16, 16), ("interpret", 32, 64, 16)])
def test_chained_tile_mma_is_exact(flavour, bm, bn, bk):
    """On cpu-arc each 8x16 A block is two 8x8 result blocks (BN = 16: one A block per
    block row; 64: four), shuffled into A's packed-pair lane layout."""
    _run(chained_kernel, flavour, bm, bn, bk)


@pytest.mark.parametrize("flavour", ["cpu-arc", "cpu-pvc"])
def test_chained_bf16_tile_mma_is_exact(flavour):
    """bf16 travels as i16 bits: the same shuffles."""
    _run(chained_kernel, flavour, 16, 32, 16, "bf16")


def test_chained_tile_mma_through_slm_is_exact_on_arc():
    a, b, d, ref = _operands()
    c = np.zeros((BM, BK), np.float32)
    chained_through_slm_kernel.on("cpu-arc")[(1,)](a, b, d, c, BM=BM, BN=BN, BK=BK)
    np.testing.assert_array_equal(c, ref)


def _run_into_b(flavour, bm, bn, bk, be, dtype="f16"):
    """o = e @ T(a @ b): the first product's result is operand B (K = bm rows) of the second."""
    npt, elem = {"i8": (np.int8, xt.int8), **DTYPES}[dtype]
    rng = np.random.default_rng(bm + bn + bk + be)
    a, b, e = (rng.integers(-2, 3, shape).astype(npt) for shape in ((bm, bk), (bk, bn), (be, bm)))
    # |s| <= 4 * bk <= 128: exact in f16, bf16 and int8 (no wrap-around), so o is exact too
    s = a.astype(np.int64) @ b.astype(np.int64)
    ref = e.astype(np.int64) @ s
    c = np.zeros((be, bn), np.int32 if dtype == "i8" else np.float32)
    chained_into_b_kernel.on(flavour)[(1,)](a, b, e, c, BM=bm, BN=bn, BK=bk, BE=be, T=elem)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("flavour,bm,bn,bk,be", [
    ("cpu-pvc", 16, 16, 16, 8), ("cpu-pvc", 32, 32, 16, 16),
    ("cpu-arc", 16, 8, 16, 8), ("cpu-arc", 32, 16, 16, 16),
    ("interpret", 16, 16, 16, 8), ("interpret", 32, 32, 16, 16)])
def test_chained_tile_mma_into_operand_b_is_exact(flavour, bm, bn, bk, be):
    """Each 16 x N operand B block (VNNI pairs of rows per lane) is two 8 x N result blocks
    stacked, lanes unchanged (lowering/rewrites/mma_relayout.py): bm = 32 is two B block rows."""
    _run_into_b(flavour, bm, bn, bk, be)


@pytest.mark.parametrize("flavour,dtype", [("cpu-arc", "bf16"), ("cpu-pvc", "bf16"), ("cpu-pvc", "i8")])
def test_chained_bf16_and_int8_tile_mma_into_operand_b_is_exact(flavour, dtype):
    """bf16 travels as i16 bits; int8 B blocks are 32 x 16 (VNNI quadruples): four result
    blocks stacked."""
    _run_into_b(flavour, 32, 16, 32, 16, dtype)


def test_chained_operand_b_of_partial_b_blocks_is_a_located_error():
    """bm = 8: one result block row is half a 16-row operand B block."""
    a, b, _, _ = _operands(8, 16, 16)
    with pytest.raises(CompilationError, match=r"tile 8x16xf16 cannot be used as operand B of tile_mma on pvc: it "
                                               r"is split into 16x16 blocks .* multiple of \[16, 16\]") as err:
        chained_into_b_kernel.on("cpu-pvc")[(1,)](a, b, np.ones((8, 8), np.float16), np.zeros((8, 16), np.float32),
                                                  BM=8, BN=16, BK=16, BE=8, T=xt.float16)
    assert "chained_mma_kernels.py:31" in str(err.value)  # the consuming tile_mma
    assert "internal compiler error" not in str(err.value)


@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc"])
def test_chained_int8_tile_mma_is_the_same_located_error(flavour):
    """int8 -> int32 -> int8: PVC's 8x32 i8 A blocks hold two columns per lane, unlike its
    8x16 result blocks; ARC (8x32, four per lane) refuses it the same way."""
    rng = np.random.default_rng(1)
    a, b, d = (rng.integers(-2, 3, s).astype(np.int8) for s in ((BM, 32), (32, 32), (32, 32)))
    with pytest.raises(CompilationError, match=r"feeds another tile_mma as an operand: on (pvc|arc) .*xt\.slm_alloc") \
            as err:
        chained_int8_kernel.on(flavour)[(1,)](a, b, d, np.zeros((BM, 32), np.int32), BM=BM, BN=32, BK=32)
    assert "chained_mma_kernels.py:37" in str(err.value)



def test_chained_operand_of_partial_a_blocks_is_a_located_error_on_arc():
    """BN = 24: three 8-column result blocks are one and a half 8x16 A blocks (on PVC the
    16x24 operand B is refused first: its B blocks are 16x16)."""
    a, b, d, _ = _operands(16, 24, 16)
    with pytest.raises(CompilationError, match=r"tile 16x24xf16 cannot be used as operand A of tile_mma on arc: "
                                               r"it is split into 8x16 blocks .* multiple of \[8, 16\]") as err:
        chained_kernel.on("cpu-arc")[(1,)](a, b, d, np.zeros((16, 16), np.float32), BM=16, BN=24, BK=16, T=xt.float16)
    assert "chained_mma_kernels.py:13" in str(err.value)  # the consuming tile_mma
