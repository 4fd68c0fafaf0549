"""A subgroup-level GEMM: each workgroup (one subgroup) computes a BM x BN tile of C."""
import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from .gemm_loop import subgroup_gemm


@xd.jit
def matmul_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C[M, N] = A[M, K] @ B[K, N], f16/bf16 inputs accumulated in f32.

    Shapes need not be multiples of the tile: out-of-bounds elements load as 0 and are
    not stored."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        xt.prefetch_tile(ta)
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        acc = xt.tile_mma(va, vb, acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    tc = xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN])
    xt.store_tile(acc, tc)


def matmul(a, b, c=None, BM=32, BN=32, BK=32, target=None):
    """``a @ b`` in f32 with the kernel above (numpy arrays in and out)."""
    M, K = a.shape
    K2, N = b.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    if c is None:
        c = np.zeros((M, N), np.float32)
    grid = ((M + BM - 1) // BM, (N + BN - 1) // BN)
    launcher = matmul_kernel.on(target) if target else matmul_kernel
    launcher[grid](a, b, c, K, BM=BM, BN=BN, BK=BK)
    return c


@xd.jit
def matmul_acc_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """The subgroup GEMM with the accumulator dtype ``ACC`` a constexpr: int8/uint8 inputs
    accumulate in ``xt.int32``, f32 inputs (tf32 DPAS, PVC only) and f16/bf16 in ``xt.float32``."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    acc = subgroup_gemm(a, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, ACC)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))
