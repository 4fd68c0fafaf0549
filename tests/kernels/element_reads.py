"""Kernels that read scalars from device arrays (``x[i, j]``), shared by the end-to-end
tests (tests/e2e/test_array_elements.py) and the machine-code tests
(tests/isa/test_array_elements_isa.py)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def grouped_from_table(meta, a, b, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """Group g = program_id(0): meta[g] = (M, N, K, A/C row, B row); its C tiles in turn."""
    g = xt.program_id(0)
    m, n, k = meta[g, 0], meta[g, 1], meta[g, 2]
    row, brow = meta[g, 3], meta[g, 4]
    for m0 in range(0, m, BM):
        for n0 in range(0, n, BN):
            ta = xt.init_tile(a, [row + m0, 0], [BM, BK])
            tb = xt.init_tile(b, [brow, n0], [BK, BN])
            acc = xt.zeros([BM, BN], xt.float32)
            for k0 in range(0, k, BK):
                acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
                ta = xt.update_tile_offset(ta, 0, BK)
                tb = xt.update_tile_offset(tb, BK, 0)
            xt.store_tile(acc, xt.init_tile(c, [row + m0, n0], [BM, BN]))


@xd.jit
def gather_rows(table, src, out, W: xt.constexpr):
    """out[r] = src[table[r]] (a block table's indirection); a row outside src reads 0."""
    r = xt.program_id(0)
    t = xt.load_tile(xt.init_tile(src, [table[r, 0], 0], [1, W]))
    xt.store_tile(t, xt.init_tile(out, [r, 0], [1, W]))
