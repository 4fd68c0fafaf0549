"""Subgroup GEMMs with a transposed operand given row-major (``order=(0, 1)`` tiles)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def matmul_at_kernel(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """C[M, N] = A @ B with A given as ``at`` = A^T, a row-major [K, M] array."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(at, [pid_m * BM, 0], [BM, BK], order=(0, 1))
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def matmul_bt_kernel(a, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """C[M, N] = A @ B with B given as ``bt`` = B^T, a row-major [N, K] array."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(bt, [0, pid_n * BN], [BK, BN], order=(0, 1))
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))
