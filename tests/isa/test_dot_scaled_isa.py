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


@xd.jit
def mx_mixed_step(a, sa, b, sb, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, FA: xt.constexpr,
                  FB: xt.constexpr):
    KA = BK // 2 if FA == "e2m1" else BK
    KB = BK // 2 if FB == "e2m1" else BK
    ta = xt.init_tile(a, [0, 0], [BM, KA])
    tb = xt.init_tile(b, [0, 0], [KB, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        s1 = xt.load_tile(xt.init_tile(sa, [0, k // 32], [BM, BK // 32]))
        s2 = xt.load_tile(xt.init_tile(sb, [0, k // 32], [BN, BK // 32]))
        acc = xt.dot_scaled(xt.load_tile(ta), s1, xt.load_tile(tb), s2, acc, a_format=FA, b_format=FB)
        ta = xt.update_tile_offset(ta, 0, KA)
        tb = xt.update_tile_offset(tb, KB, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


@pytest.mark.parametrize("target,fa,fb,BM", [("pvc", "e2m1", "e4m3", 16), ("bmg", "e4m3", "e2m1", 16)])
def test_dot_scaled_mixed_e2m1_costs_the_nonzero_spread_blocks(target, fa, fb, BM, ocloc_path):
    """e2m1 beside e4m3: the e2m1 side's nibble tiles spread to K order by 0/1 matrices whose
    zero blocks (outside their 16 x 32 diagonal band) are no DPAS: the plain BK product's
    (BM/m)(BN/n)(BK/k), plus, per nibble, one DPAS per output block of the spread operand
    ([BM, BK] for a: (BM/m)(BK/n); [BK, BN] for b: (BK/m)(BN/n)), since each output block
    reads one K block of the band; nothing spills. (ARC, where the spread A operand is
    re-laid out from DPAS result blocks, runs in the mx fuzz seeds of tests/fuzz.)"""
    from xetile_dsl.targets import as_target
    BN, BK = 16, 64
    sig = dict(SIG, a="u8[:,:]" if fa == "e2m1" else SIG["a"], b="u8[:,:]" if fb == "e2m1" else SIG["b"])
    report = xd.compile(mx_mixed_step, sig, dict(BM=BM, BN=BN, BK=BK, FA=fa, FB=fb), target=target).report()
    cfg = as_target(target).dpas_for("f16", "f16")
    spread = (BM // cfg.m) * (BK // cfg.n) if fa == "e2m1" else (BK // cfg.m) * (BN // cfg.n)
    want = (BM // cfg.m) * (BN // cfg.n) * (BK // cfg.k) + 2 * spread
    print(f"{target} dot_scaled {fa} x {fb} BK={BK}: {dict(report.hot.counts)}, spill {report.spill_bytes} B")
    assert report.hot.counts["dpas"] == want and report.spill_bytes == 0
