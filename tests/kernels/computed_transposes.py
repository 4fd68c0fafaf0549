"""Transposes of computed values done in registers (lane shuffles; lowering/rewrites/register_transpose.py):
a transpose accumulated in a loop, the workgroup form where each subgroup transposes its own
piece, and the operand-A case that still goes through SLM."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def transpose_accumulate_kernel(x, y, STEPS, M: xt.constexpr, N: xt.constexpr):
    """y[0:N, 0:M] = sum over k < STEPS of (2 x[kM:(k+1)M, 0:N] + 1)^T (a transpose per iteration)."""
    t = xt.init_tile(x, [0, 0], [M, N])
    acc = xt.zeros([N, M], xt.float32)
    for k in range(0, STEPS):
        acc = acc + xt.transpose(xt.load_tile(t) * 2 + 1)
        t = xt.update_tile_offset(t, M, 0)
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [N, M]))


@xd.jit
def workgroup_transpose_computed_kernel(x, y):
    """y[0:32, 0:32] = (2 x[0:32, 0:32] + 1)^T over 2 subgroups: subgroup s computes rows
    16s..16s+15 of the source and stores columns 16s.. of the result, its own transpose."""
    rows = xt.wg_map(sg_layout=[2, 1], sg_data=[16, 32])
    cols = xt.wg_map(sg_layout=[1, 2], sg_data=[32, 16])
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 32], wg_map=rows))
    xt.store_tile(xt.transpose(v * 2 + 1, wg_map=cols), xt.init_tile(y, [0, 0], [32, 32], wg_map=cols))


@xd.jit
def matmul_at_computed_kernel(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = (2 AT + 1)^T @ B, AT a row-major [K, M] array: the transpose is operand A, whose
    lane layout is not one column per lane, so it goes through SLM."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    tat = xt.init_tile(at, [0, pid_m * BM], [BK, BM])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.transpose(xt.load_tile(tat) * 2 + 1), xt.load_tile(tb), acc)
        tat = xt.update_tile_offset(tat, BK, 0)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def workgroup_transpose_across_subgroups_kernel(x, y):
    """y[0:32, 0:32] = (2 x[0:32, 0:32] + 1)^T over 4 subgroups with [2, 2] x [16, 16] on both
    sides: subgroup (r, c) needs the piece subgroup (c, r) computed, so it goes through SLM."""
    m = xt.wg_map(sg_layout=[2, 2], sg_data=[16, 16])
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 32], wg_map=m))
    xt.store_tile(xt.transpose(v * 2 + 1, wg_map=m), xt.init_tile(y, [0, 0], [32, 32], wg_map=m))
