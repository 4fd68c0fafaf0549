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
