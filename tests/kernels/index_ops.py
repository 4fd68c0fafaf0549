"""Example kernels with index vectors (``xt.arange``), ``argmax``/``argmin``, ``while``
loops over tiles and integer reductions, at subgroup and workgroup level."""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt

#: 2 x 2 subgroups of 16 x 16 (a 32 x 32 workgroup tile)
WG_2X2 = xt.wg_map(sg_layout=[2, 2], sg_data=[16, 16])
#: 4 subgroups owning 8 whole rows each
WG_ROWS = xt.wg_map(sg_layout=[4, 1], sg_data=[8, 32])


@xd.jit
def column_ids_kernel(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """y = x * 1000 + global column index (a non-splat constant plus a runtime offset)."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    v = xt.load_tile(xt.init_tile(x, [pid_m * BM, pid_n * BN], [BM, BN]))
    cols = xt.arange(0, BN) + pid_n * BN
    xt.store_tile(v * 1000 + cols, xt.init_tile(y, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def iota_row_kernel(y, BN: xt.constexpr, DT: xt.constexpr):
    """Row pid of y = 0, 1, ..., BN - 1 in type DT (a constant stored as it is)."""
    xt.store_tile(xt.arange(0, BN, DT), xt.init_tile(y, [xt.program_id(0), 0], [1, BN]))


@xd.jit
def column_ids_wg_kernel(x, y):
    """The same at workgroup level: each subgroup adds its slice of ``arange(0, 32)``."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 32], wg_map=WG_2X2))
    xt.store_tile(v * 1000 + xt.arange(0, 32), xt.init_tile(y, [0, 0], [32, 32], wg_map=WG_2X2))


@xd.jit
def argmax_rows_kernel(x, best, worst, BM: xt.constexpr, BN: xt.constexpr):
    """best[i, 0] = argmax of row i, worst[0, j] = argmin of column j of each BM x BN tile."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.argmax(v, axis=1), xt.init_tile(best, [pid * BM, 0], [BM, 1]))
    xt.store_tile(xt.argmin(v, axis=0), xt.init_tile(worst, [pid, 0], [1, BN]))


@xd.jit
def argmax_rows_wg_kernel(x, best):
    """Workgroup argmax of each row of a 32 x 32 tile (every subgroup owns 8 rows)."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 32], wg_map=WG_ROWS))
    xt.store_tile(xt.argmax(v, axis=1), xt.init_tile(best, [0, 0], [32, 1],
                                                     wg_map=xt.wg_map(sg_layout=[4, 1], sg_data=[8, 1])))


@xd.jit
def halving_sums_kernel(x, y, sums, steps, BM: xt.constexpr, BN: xt.constexpr):
    """A ``while`` carrying two tiles and a counter: ``sums`` accumulates the row sums of
    x, x/2, x/4, ... (steps terms); y is x / 2**steps."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    acc = xt.zeros([BM, 1], xt.float32)
    i = 0
    while i < steps:
        acc = acc + xt.sum(v, axis=1)
        v = v * 0.5
        i = i + 1
    xt.store_tile(v, xt.init_tile(y, [pid * BM, 0], [BM, BN]))
    xt.store_tile(acc, xt.init_tile(sums, [pid * BM, 0], [BM, 1]))


@xd.jit
def halving_wg_kernel(x, y, steps):
    """Workgroup level: each of 2 x 2 subgroups carries its 16 x 16 piece through the
    ``while``; the arange in the body is each subgroup's column slice."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [32, 32], wg_map=WG_2X2))
    i = 0
    while i < steps:
        v = v * 0.5 + xt.arange(0, 32)
        i = i + 1
    xt.store_tile(v, xt.init_tile(y, [0, 0], [32, 32], wg_map=WG_2X2))


@xd.jit
def int_reductions_kernel(x, rsum, rmax, cmin, cprod, BM: xt.constexpr, BN: xt.constexpr):
    """Row sums and maxima, column minima and products, in the element type of x
    (sums and products wrap around; max/min are signed or unsigned by the type)."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.sum(v, axis=1), xt.init_tile(rsum, [pid * BM, 0], [BM, 1]))
    xt.store_tile(xt.max(v, axis=1), xt.init_tile(rmax, [pid * BM, 0], [BM, 1]))
    xt.store_tile(xt.min(v, axis=0), xt.init_tile(cmin, [pid, 0], [1, BN]))
    xt.store_tile(xt.prod(v, axis=0), xt.init_tile(cprod, [pid, 0], [1, BN]))
