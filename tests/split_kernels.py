"""Kernels shared by the accumulator-splitting tests (tests/isa, tests/e2e): workgroup
GEMMs whose accumulator per subgroup is larger than the register budget."""
from __future__ import annotations

import functools

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.lowering import pipeline
from xetile_dsl.lowering.passes.split_accumulators import SplitAccumulators

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def wg_tiles(rows: int, cols: int, sm: int = 4, sn: int = 4) -> dict:
    """gemm_wg_kernel constants giving each of ``sm x sn`` subgroups a rows x cols piece."""
    return {"BM": rows * sm, "BN": cols * sn, "BK": 32, "SM": sm, "SN": sn, "PF": 2, "ACC": xt.float32}


@xd.jit
def gemm_copying_a_kernel(a, b, c, o, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ B with 4x4 subgroups of BM/4 x BN/4, and a copy of A's M x K slices written
    to ``o`` in the K loop (every subgroup and workgroup column writes the same values):
    the loop writes memory, so it must not be run twice."""
    mp_ab = xt.wg_map(sg_layout=[4, 4], sg_data=[BM // 4, BK])
    mp_b = xt.wg_map(sg_layout=[4, 4], sg_data=[BK, BN // 4])
    mp_c = xt.wg_map(sg_layout=[4, 4], sg_data=[BM // 4, BN // 4])
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=mp_ab)
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=mp_b)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.store_tile(va, xt.init_tile(o, [m, k], [BM, BK], wg_map=mp_ab))
        acc = xt.tile_mma(va, vb, acc, wg_map=mp_c)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


def forced_parts(monkeypatch, parts: int) -> None:
    """Make the pipeline's xegpu-split-accumulators use ``parts`` copies (1: never split),
    for measuring what the split changes."""
    monkeypatch.setattr(pipeline, "SplitAccumulators", functools.partial(SplitAccumulators, parts=parts))
