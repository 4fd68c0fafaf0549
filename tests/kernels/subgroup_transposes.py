"""Subgroup-level transposes (no wg_map; lowering/passes/sg_transpose.py): of a loaded tile
(folded into an ``order = [0, 1]`` load), of a computed tile (lane shuffles in registers,
or SLM when larger than half the register file), and as the B
operand of a GEMM C = A @ f(BT)^T with BT given row-major."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def transpose_loaded_kernel(x, y, M: xt.constexpr, N: xt.constexpr):
    """Workgroup p: y[0:N, p*M:(p+1)*M] = x[p*M:(p+1)*M, 0:N]^T (transpose folded into the load)."""
    p = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [p * M, 0], [M, N]))
    xt.store_tile(xt.transpose(v), xt.init_tile(y, [0, p * M], [N, M]))


@xd.jit
def transpose_computed_kernel(x, y, M: xt.constexpr, N: xt.constexpr):
    """Workgroup p: y[0:N, p*M:(p+1)*M] = (2 x[p*M:(p+1)*M, 0:N] + 1)^T (registers or SLM)."""
    p = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [p * M, 0], [M, N]))
    xt.store_tile(xt.transpose(v * 2 + 1), xt.init_tile(y, [0, p * M], [N, M]))


@xd.jit
def matmul_bt_loaded_kernel(a, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ BT^T, BT a row-major [N, K] array loaded and transposed (folded into the load)."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tbt = xt.init_tile(bt, [pid_n * BN, 0], [BN, BK])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.transpose(xt.load_tile(tbt)), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tbt = xt.update_tile_offset(tbt, 0, BK)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def matmul_bt_computed_kernel(a, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ (2 BT + 1)^T: the B operand is the transpose of a computed value (in registers)."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tbt = xt.init_tile(bt, [pid_n * BN, 0], [BN, BK])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.transpose(xt.load_tile(tbt) * 2 + 1), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tbt = xt.update_tile_offset(tbt, 0, BK)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def workgroup_copy_and_sg_transpose_kernel(x, y, z, w):
    """A workgroup kernel (4 subgroups: y = x + 1 by wg_map) that also transposes an
    undistributed computed tile: w = (2 z + 1)^T, in each subgroup's registers (a value too
    large for them would take one SLM slice per subgroup)."""
    m = xt.wg_map(sg_layout=[2, 2], sg_data=[16, 16])
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 32], wg_map=m))
    xt.store_tile(v + 1, xt.init_tile(y, [0, 0], [32, 32], wg_map=m))
    u = xt.load_tile(xt.init_tile(z, [0, 0], [32, 16]))
    xt.store_tile(xt.transpose(u * 2 + 1), xt.init_tile(w, [0, 0], [16, 32]))


@xd.jit
def transpose_column_major_kernel(xt_arr, y, M: xt.constexpr, N: xt.constexpr):
    """y[0:N, 0:M] = (the M x N column-major view of xt_arr)^T = xt_arr[0:N, 0:M]: the
    transpose of an order=(0, 1) load is a row-major load."""
    v = xt.load_tile(xt.init_tile(xt_arr, [0, 0], [M, N], order=(0, 1)))
    xt.store_tile(xt.transpose(v), xt.init_tile(y, [0, 0], [N, M]))
