"""GEMMs with a transposed operand stored row-major (order=(0, 1) tiles) on the CPU device,
PVC and ARC flavours, against numpy: C = A^T-stored @ B and C = A @ B^T-stored."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.gemm_transposed import matmul_at_kernel, matmul_bt_kernel
from tf32_ref import tf32_matmul_ref

DTYPES = {"f16": np.float16, "f32": np.float32}


def _inputs(M, N, K, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(DTYPES[dtype])
    b = rng.standard_normal((K, N)).astype(DTYPES[dtype])
    return a, b


def _run(which, a, b, flavour, tiles):
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = tiles
    c = np.zeros((M, N), np.float32)
    grid = ((M + BM - 1) // BM, (N + BN - 1) // BN)
    if which == "at":
        matmul_at_kernel.on(f"cpu-{flavour}")[grid](np.ascontiguousarray(a.T), b, c, K,
                                                    BM=BM, BN=BN, BK=BK, ACC=xt.float32)
    else:
        matmul_bt_kernel.on(f"cpu-{flavour}")[grid](a, np.ascontiguousarray(b.T), c, K,
                                                    BM=BM, BN=BN, BK=BK, ACC=xt.float32)
    return c


def _check(c, a, b, dtype):
    if dtype == "f32":  # the tf32 DPAS rounds its inputs: only f32 accumulation error left
        ref, f32_error = tf32_matmul_ref(a, b)
        np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error)
        return
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # f16 products are exact in f32
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-4 * (np.abs(a).astype(np.float64) @ np.abs(b)).max())


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("which", ["at", "bt"])
def test_f16_transposed_operand(which, flavour):
    M, N, K = 64, 96, 64
    a, b = _inputs(M, N, K, "f16", seed=1 + (which == "bt"))
    tiles = (32, 32, 32) if flavour == "pvc" else (16, 16, 32)
    _check(_run(which, a, b, flavour, tiles), a, b, "f16")


@pytest.mark.parametrize("which", ["at", "bt"])
def test_tf32_transposed_operand(which):
    """f32 (tf32) on PVC: B^T uses the 32-bit transposed block read, A^T gathers."""
    M, N, K = 64, 64, 96
    a, b = _inputs(M, N, K, "f32", seed=3)
    _check(_run(which, a, b, "pvc", (32, 32, 32)), a, b, "f32")


def test_edges_read_zero():
    """M, N, K not multiples of the tile: out-of-bounds elements of transposed blocks are 0."""
    M, N, K = 40, 48, 56
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 4, (M, K)).astype(np.float16)
    b = rng.integers(-4, 4, (K, N)).astype(np.float16)
    for which in ("at", "bt"):
        c = _run(which, a, b, "pvc", (32, 32, 32))
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_store_to_transposed_tile_writes_the_transpose():
    """Stores to order=(0, 1) tiles are per-row scattered stores (more in test_lowering_gaps)."""
    @xd.jit
    def store_t(x, y):
        v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
        xt.store_tile(v, xt.init_tile(y, [0, 0], [8, 16], order=(0, 1)))

    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    y = np.zeros((16, 16), np.float32)
    store_t.on("cpu-pvc")[(1,)](x, y)
    np.testing.assert_array_equal(y[:, :8], x.T)
    assert not y[:, 8:].any()


def test_at_operand_a_through_transposed_block_reads():
    """A^T stored K x M: on the PVC flavour operand A is read by the 32-bit transposed 2D
    block builtin (16x16 halves per message, defined from its spec for the CPU device),
    cut into two 8-row DPAS blocks; exact against numpy on small integers, with M, N, K
    not multiples of the tile (out-of-bounds halves of a message read as 0)."""
    M, N, K = 48, 40, 80
    sig = {"at": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    consts = {"BM": 32, "BN": 32, "BK": 32, "ACC": xt.float32}
    llvm = xd.compile(matmul_at_kernel, sig, consts, target="cpu-pvc").asm["llvm"]
    assert "intel_sub_group_2d_block_read_transpose_32b_16r8x1c" in llvm
    # the gather is only the fallback for a column that does not start a dword, inside the
    # read's wrapper (tests/isa/test_transposed_offsets_isa.py: folded away for aligned ones)
    kernel_body = re.search(r'^define [^@]*@"?matmul_at_kernel\b.*?^}', llvm, re.M | re.S).group(0)
    assert "__xetile_load2d_gather" not in kernel_body
    rng = np.random.default_rng(11)
    a = rng.integers(-8, 8, (M, K)).astype(np.float16)
    b = rng.integers(-8, 8, (K, N)).astype(np.float16)
    c = _run("at", a, b, "pvc", (32, 32, 32))
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@xd.jit
def _wg_at_transpose(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
                     SN: xt.constexpr):
    """C = A @ B with A^T ([K, M]) loaded row-major under the swapped map and
    ``tile_transpose``d to the A map: subgroup s loads A^T columns of block s % SM but
    needs A rows of block s // SN (not its own data: before, an SLM exchange)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    tat = xt.init_tile(at, [0, m], [BK, BM], wg_map=xt.wg_map(sg_layout=[SN, SM], sg_data=[BK, BM // SM]))
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN]))
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.tile_transpose(xt.load_tile(tat), wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK]))
        acc = xt.tile_mma(va, xt.load_tile(tb), acc, wg_map=mp_c)
        tat = xt.update_tile_offset(tat, BK, 0)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_tile_transpose_of_a_loaded_operand_is_a_transposed_load(flavour):
    """The workgroup tile_transpose of a loaded A^T tile becomes transposed loads of A
    (no SLM: lowering/passes/wg_to_sg/transpose.py, _foldable), exact against numpy on both lane
    layouts, two workgroups per dimension and three K steps."""
    tiles = {"pvc": (64, 64, 32, 2, 2), "arc": (32, 32, 32, 2, 2)}[flavour]
    BM, BN, BK, SM, SN = tiles
    M, N, K = 2 * BM, 2 * BN, 3 * BK
    consts = {"BM": BM, "BN": BN, "BK": BK, "SM": SM, "SN": SN}
    sig = {"at": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    compiled = xd.compile(_wg_at_transpose, sig, consts, target=f"cpu-{flavour}")
    assert "memref.alloc" not in compiled.asm["xegpu"] and "gpu.barrier" not in compiled.asm["xegpu"]
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, (M, K)).astype(np.float16)
    b = rng.integers(-8, 8, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    _wg_at_transpose.on(f"cpu-{flavour}")[(M // BM, N // BN)](np.ascontiguousarray(a.T), b, c, K, **consts)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_int8_bt_exact(flavour):
    """int8 B stored transposed: on pvc one 32-bit transposed block read gives the VNNI
    operand B directly (4 bytes of a B^T row per dword), on ARC per-lane reads; exact."""
    rng = np.random.default_rng(5)
    M, N, K = 64, 64, 128
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    BM, BN = (32, 32) if flavour == "pvc" else (16, 16)
    c = np.zeros((M, N), np.int32)
    matmul_bt_kernel.on(f"cpu-{flavour}")[(M // BM, N // BN)](a, np.ascontiguousarray(b.T), c, K,
                                                              BM=BM, BN=BN, BK=64, ACC=xt.int32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_f16_at_eight_row_tiles(flavour):
    """A^T-stored with 8-row tiles (the M = 1 GEMM's tile): on pvc each 16-row transposed
    message keeps its first 8 rows; rows past the tile (and past M = 36) are dropped."""
    M, N, K = 36, 32, 64
    a, b = _inputs(M, N, K, "f16", seed=7)
    c = np.zeros((M, N), np.float32)
    BN = 16 if flavour == "pvc" else 8
    matmul_at_kernel.on(f"cpu-{flavour}")[((M + 7) // 8, N // BN)](np.ascontiguousarray(a.T), b, c, K,
                                                                   BM=8, BN=BN, BK=32, ACC=xt.float32)
    _check(c, a, b, "f16")


@pytest.mark.parametrize("flavour,K", [("pvc", 81), ("arc", 81), ("pvc", 1)])
def test_int8_at_exact(flavour, K):
    """int8 A stored transposed: on pvc two 32-bit transposed reads per A block (rows of
    each parity of A^T as a double-pitch surface) and a byte interleave give lane n its K
    pair (2n, 2n+1); K = 81 (odd) checks the parity surfaces' heights, K = 1 the array
    without odd rows; exact."""
    rng = np.random.default_rng(6)
    M, N = 64, 64
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    BM, BN = (32, 32) if flavour == "pvc" else (16, 16)
    c = np.zeros((M, N), np.int32)
    matmul_at_kernel.on(f"cpu-{flavour}")[(M // BM, N // BN)](np.ascontiguousarray(a.T), b, c, K,
                                                              BM=BM, BN=BN, BK=64, ACC=xt.int32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
