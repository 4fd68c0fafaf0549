"""Subgroup-level kernels with fused element-wise epilogues, reductions and broadcasts
(each workgroup is one subgroup).  Used by the examples' tests and the ISA checks."""
import xetile_dsl as xd
import xetile_dsl.language as xt

from xetile_dsl.kernels.gemm_loop import subgroup_gemm


@xd.jit
def gemm_bias_relu(a, b, bias, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = bf16(relu(a @ b + bias)) with the epilogue fused after the K loop."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    acc = subgroup_gemm(a, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, xt.float32)
    row = xt.load_tile(xt.init_tile(bias, [0, pid_n * BN], [1, BN]))
    y = xt.maximum(acc + row, 0.0)
    xt.store_tile(xt.astype(y, xt.bfloat16), xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def gemm_epilogue(a, b, bias, scale, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr,
                  EPI: xt.constexpr):
    """c = bf16(epilogue(a @ b)): EPI 1 plain, 2 relu(acc + bias row), 3 relu(acc * scale
    column + bias row); ``bias`` is [1, N], ``scale`` [M, 1] (no spills)."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    acc = subgroup_gemm(a, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, xt.float32)
    if EPI == 1:
        y = acc
    elif EPI == 2:
        row = xt.load_tile(xt.init_tile(bias, [0, pid_n * BN], [1, BN]))
        y = xt.maximum(acc + row, 0.0)
    else:
        col = xt.load_tile(xt.init_tile(scale, [pid_m * BM, 0], [BM, 1]))
        row = xt.load_tile(xt.init_tile(bias, [0, pid_n * BN], [1, BN]))
        y = xt.maximum(acc * col + row, 0.0)
    xt.store_tile(xt.astype(y, xt.bfloat16), xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def gemm_gelu(a, b, c, K, TANH: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = gelu(a @ b) in f32, erf form or (TANH) the tanh approximation."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    acc = subgroup_gemm(a, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, xt.float32)
    if TANH:
        y = 0.5 * acc * (1.0 + xt.tanh(0.7978845608 * (acc + 0.044715 * acc * acc * acc)))
    else:
        y = 0.5 * acc * (1.0 + xt.erf(acc * 0.7071067811865476))
    xt.store_tile(y, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def row_softmax(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """Softmax of each row of a [M, BN] array: max and sum per row, broadcast back."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    e = xt.exp(v - xt.max(v, axis=1))
    xt.store_tile(e / xt.sum(e, axis=1), xt.init_tile(y, [pid * BM, 0], [BM, BN]))
