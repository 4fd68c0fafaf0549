"""xt.dot_scaled on PVC, from Intel's offline compiler: the block's product is DPAS (fp8
converted to f16 in registers), nothing spills, and a b_scale given as the row [1, N]
(a [K/32, N] array) needs no cross-lane exchange, where Triton's [N, 1] column is
transposed through SLM (docs/decisions/038-dot-scaled.md)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def mx_loop(a, sa, b, sb, c, K, BM: xt.constexpr, BN: xt.constexpr, ROW: xt.constexpr):
    ta = xt.init_tile(a, [0, 0], [BM, 32])
    tb = xt.init_tile(b, [0, 0], [32, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, 32):
        s1 = xt.load_tile(xt.init_tile(sa, [0, k // 32], [BM, 1]))
        s2 = (xt.load_tile(xt.init_tile(sb, [k // 32, 0], [1, BN])) if ROW
              else xt.load_tile(xt.init_tile(sb, [0, k // 32], [BN, 1])))
        acc = xt.dot_scaled(xt.load_tile(ta), s1, xt.load_tile(tb), s2, acc, format="e4m3")
        ta = xt.update_tile_offset(ta, 0, 32)
        tb = xt.update_tile_offset(tb, 32, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


SIG = {"a": "f8e4m3fn[:,:]", "sa": "u8[:,:]", "b": "f8e4m3fn[:,:]", "sb": "u8[:,:]", "c": "f32[:,:]", "K": "i32"}


@pytest.mark.parametrize("row", [True, False])
def test_dot_scaled_hot_loop_on_pvc(row, ocloc_path):
    report = xd.compile(mx_loop, SIG, dict(BM=16, BN=16, ROW=row), target="pvc").report()
    hot = report.hot
    print(f"pvc dot_scaled b_scale {'[1, N]' if row else '[N, 1]'}: {hot.instructions} instructions, "
          f"{dict(hot.counts)}, spill {report.spill_bytes} B")
    assert hot.counts["dpas"] > 0 and hot.counts["scratch"] == 0 and report.spill_bytes == 0
    assert (hot.counts["slm"] == 0) == row


@xd.jit
def mx_step(a, sa, b, sb, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, FP4: xt.constexpr):
    KB = BK // 2 if FP4 else BK
    ta = xt.init_tile(a, [0, 0], [BM, KB])
    tb = xt.init_tile(b, [0, 0], [KB, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        s1 = xt.load_tile(xt.init_tile(sa, [0, k // 32], [BM, BK // 32]))
        s2 = xt.load_tile(xt.init_tile(sb, [0, k // 32], [BN, BK // 32]))
        acc = xt.dot_scaled(xt.load_tile(ta), s1, xt.load_tile(tb), s2, acc, format="e2m1" if FP4 else "e4m3")
        ta = xt.update_tile_offset(ta, 0, KB)
        tb = xt.update_tile_offset(tb, KB, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


@pytest.mark.parametrize("bk,fp4", [(64, False), (64, True)])
def test_dot_scaled_k_step_costs_one_dpas_set_per_block(bk, fp4, ocloc_path):
    """A call over BK = 64 (two scale blocks) is one masked tile_mma per block; the XeGPU
    lowering keeps only each block's K range, so the hot loop has the DPAS of a plain
    BK product: (BM/8) x (BN/16) x (BK/16) on PVC (f16 DPAS 8 x 16 x 16), not twice that."""
    from xetile_dsl.targets import as_target
    sig = dict(SIG, a="u8[:,:]", b="u8[:,:]") if fp4 else SIG
    report = xd.compile(mx_step, sig, dict(BM=16, BN=16, BK=bk, FP4=fp4), target="pvc").report()
    cfg = as_target("pvc").dpas_for("f16", "f16")
    want = (16 // cfg.m) * (16 // cfg.n) * (bk // cfg.k)
    print(f"pvc dot_scaled BK={bk} {'e2m1' if fp4 else 'e4m3'}: {dict(report.hot.counts)}, spill {report.spill_bytes} B")
    assert report.hot.counts["dpas"] == want and report.spill_bytes == 0
