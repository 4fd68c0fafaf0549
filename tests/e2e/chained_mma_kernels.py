"""Chained tile_mma kernels (a tile_mma result feeding another tile_mma), shared by
tests/e2e/test_chained_mma.py and tests/isa/test_chained_mma_isa.py; the e2e error tests
name lines of this file."""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def chained_kernel(a, b, d, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, T: xt.constexpr):
    s = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    o = xt.tile_mma(xt.astype(s, T), xt.load_tile(xt.init_tile(d, [0, 0], [BN, BK])))
    xt.store_tile(o, xt.init_tile(c, [0, 0], [BM, BK]))


@xd.jit
def chained_through_slm_kernel(a, b, d, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    s = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    buf = xt.slm_alloc([BM, BN], xt.float16)
    xt.store_tile(xt.astype(s, xt.float16), xt.init_tile(buf, [0, 0], [BM, BN]))
    xt.barrier()
    o = xt.tile_mma(xt.load_tile(xt.init_tile(buf, [0, 0], [BM, BN])), xt.load_tile(xt.init_tile(d, [0, 0], [BN, BK])))
    xt.store_tile(o, xt.init_tile(c, [0, 0], [BM, BK]))


@xd.jit
def chained_into_b_kernel(a, b, e, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, BE: xt.constexpr,
                          T: xt.constexpr):
    s = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    o = xt.tile_mma(xt.load_tile(xt.init_tile(e, [0, 0], [BE, BM])), xt.astype(s, T))
    xt.store_tile(o, xt.init_tile(c, [0, 0], [BE, BN]))


@xd.jit
def chained_int8_kernel(a, b, d, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    s = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    o = xt.tile_mma(xt.astype(s, xt.int8), xt.load_tile(xt.init_tile(d, [0, 0], [BN, BK])))
    xt.store_tile(o, xt.init_tile(c, [0, 0], [BM, BK]))
