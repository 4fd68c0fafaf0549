"""Subgroup GEMMs with a transposed operand given row-major (``order=(0, 1)`` tiles)."""
import xetile_dsl as xd
import xetile_dsl.language as xt

from .gemm_loop import subgroup_gemm


@xd.jit
def matmul_at_kernel(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """C[M, N] = A @ B with A given as ``at`` = A^T, a row-major [K, M] array."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    acc = subgroup_gemm(at, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, ACC, A_ORDER=(0, 1))
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def matmul_bt_kernel(a, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """C[M, N] = A @ B with B given as ``bt`` = B^T, a row-major [N, K] array."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    acc = subgroup_gemm(a, bt, pid_m * BM, pid_n * BN, K, BM, BN, BK, ACC, B_ORDER=(0, 1))
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))
