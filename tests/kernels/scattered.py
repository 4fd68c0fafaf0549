"""Kernels on scattered tiles: gather, scatter and atomic accumulation."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def gather_kernel(src, idx, out, n, N: xt.constexpr):
    """out[0, j] = src[0, 2 * idx[0, j] + 1] where that offset is < n, else 0."""
    pid = xt.program_id(0)
    i = xt.load_tile(xt.init_tile(idx, [0, pid * N], [1, N]))
    offs = i * 2 + 1
    v = xt.load_gather(xt.init_tile(src, offs), offs < n)
    xt.store_tile(v, xt.init_tile(out, [0, pid * N], [1, N]))


@xd.jit
def scatter_kernel(src, idx, out, N: xt.constexpr):
    """out[0, idx[0, j]] = 2 * src[0, j] where idx[0, j] % 3 != 0 (other elements untouched)."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(src, [0, pid * N], [1, N]))
    i = xt.load_tile(xt.init_tile(idx, [0, pid * N], [1, N]))
    xt.store_scatter(v * 2, xt.init_tile(out, i), i % 3 != 0)


@xd.jit
def atomic_accumulate_kernel(x, idx, out, KIND: xt.constexpr, N: xt.constexpr):
    """Workgroup g combines row g of ``x`` into ``out[0, idx[0, j]]`` with the atomic ``KIND``."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid, 0], [1, N]))
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [1, N]))
    xt.atomic_rmw(KIND, v, xt.init_tile(out, i))


@xd.jit
def block_partial_sums_kernel(x, out, KIND: xt.constexpr, SLAB: xt.constexpr, R: xt.constexpr,
                              BM: xt.constexpr, BN: xt.constexpr):
    """``x`` holds slabs of SLAB rows; workgroup (i, j, g) combines slabs g*R .. g*R+R-1 of its
    BM x BN block and folds that partial result into ``out`` with the atomic ``KIND``
    (a block tile: elements outside ``out`` are skipped)."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    g = xt.program_id(2)
    acc = xt.load_tile(xt.init_tile(x, [g * R * SLAB + pid_m * BM, pid_n * BN], [BM, BN]))
    for r in xt.static_range(1, R):
        acc = acc + xt.load_tile(xt.init_tile(x, [(g * R + r) * SLAB + pid_m * BM, pid_n * BN], [BM, BN]))
    xt.atomic_rmw(KIND, acc, xt.init_tile(out, [pid_m * BM, pid_n * BN], [BM, BN]))
