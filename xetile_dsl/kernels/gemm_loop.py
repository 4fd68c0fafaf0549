"""The K loop every subgroup-level GEMM of this package shares, as ``@jit`` helpers that
kernels call (the frontend inlines them, so the IR is the one a kernel spelling the loop
out would give; cache keys cover the helpers' source)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def k_loop(ta, tb, acc, K, BK):
    """``acc`` plus the products of the A tile ``ta`` and the B tile ``tb`` over ``K``:
    each step multiplies one BK-wide slice, then moves A right and B down by ``BK``."""
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    return acc


@xd.jit
def subgroup_gemm(a, b, row, col, K, BM, BN, BK, ACC, A_ORDER=(1, 0), B_ORDER=(1, 0)):
    """The BM x BN tile of A @ B at (``row``, ``col``) of C, accumulated in ``ACC``.
    ``A_ORDER``/``B_ORDER`` ``(0, 1)`` read an operand stored transposed (A as [K, M], B
    as [N, K]) through a column-major tile."""
    ta = xt.init_tile(a, [row, 0], [BM, BK], order=A_ORDER)
    tb = xt.init_tile(b, [0, col], [BK, BN], order=B_ORDER)
    return k_loop(ta, tb, xt.zeros([BM, BN], ACC), K, BK)
