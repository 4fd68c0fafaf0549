"""tile_mma of tiles whose extents are not m16n8k16 multiples on sm90 without a GPU (a
[1, 16] row, 2, 4 or 8 rows: the shapes a DPAS also takes, and tf32's K steps of 8).  The
operands keep their ``cols`` / ``rep`` layouts; the emitter moves them into zero-padded
fragments by shuffles and the result back (``warp_ops.padded_mma``).

Checked here: the padding plan against the fragments' lane positions (the layouts every
GPU-run mma kernel uses), a warp simulated in numpy from those plans and positions
giving numpy's product, and ptxas's assembly of the kernels (the mma.sync count a K step,
no spill).  benchmarks/nv_ops_check.py's "small mma" cases run them on a GPU; also the
integer reductions' unsigned kinds and widened sub-32-bit shuffles."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx.layouts import Layout, default_layout
from xetile_dsl.codegen.nvptx.warp_ops import broadcast_sources, lane_positions, relayout_plan

from .test_nvptx_compile import ptxas_report

WARP = 32


def _held(layout: Layout, x: np.ndarray) -> list[list[float]]:
    """Each lane's slots of ``x`` in ``layout``."""
    return [[x[r, c] for r, c in lane] for lane in lane_positions(layout)]


def _moved(src: Layout, dst: Layout, regs: list[list[float]], pad: bool) -> list[list[float]]:
    """What :func:`relayout` computes, lane by lane, from the plan: slot j of lane l is
    slot ks[l] of lane lanes[l] (a shuffle), or a zero where ks[l] is -1."""
    out = [[] for _ in range(WARP)]
    for lanes, ks in relayout_plan(src, dst, pad=pad):
        for lane in range(WARP):
            out[lane].append(0.0 if ks[lane] < 0 else regs[lanes[lane]][ks[lane]])
    return out


@pytest.mark.parametrize("shape,kind,padded", [((1, 16), "mma_a", (16, 16)), ((4, 32), "mma_a", (16, 32)),
                                               ((16, 24), "mma_b", (16, 24)), ((8, 8), "mma_b", (16, 8)),
                                               ((2, 32), "mma_c", (16, 32)), ((1, 16), "mma_c", (16, 16))])
def test_padding_plan_zeros_exactly_the_positions_past_the_source(shape, kind, padded):
    src, dst = default_layout(shape), Layout(kind, padded)
    x = np.arange(1, shape[0] * shape[1] + 1, dtype=np.float64).reshape(shape)
    want = np.zeros(padded)
    want[:shape[0], :shape[1]] = x
    assert _moved(src, dst, _held(src, x), pad=True) == _held(dst, want)


def test_a_position_the_source_lacks_is_an_error_without_pad():
    with pytest.raises(ValueError, match="pad=True"):
        relayout_plan(default_layout((1, 16)), Layout("mma_a", (16, 16)))


def _warp_mma(fa: list, fb: list, fc: list, m: int, k: int, n: int) -> list:
    """mma.sync over fragments: the matrices the lanes hold (their positions), multiplied,
    handed back in C's positions."""
    a, b, c = np.zeros((m, k)), np.zeros((k, n)), np.zeros((m, n))
    for mat, layout, regs in ((a, Layout("mma_a", (m, k)), fa), (b, Layout("mma_b", (k, n)), fb),
                              (c, Layout("mma_c", (m, n)), fc)):
        for lane, positions in enumerate(lane_positions(layout)):
            for (r, col), v in zip(positions, regs[lane]):
                mat[r, col] = v
    return _held(Layout("mma_c", (m, n)), a @ b + c)


@pytest.mark.parametrize("m,k,n", [(1, 16, 16), (2, 16, 32), (4, 32, 48), (8, 16, 16), (3, 8, 40)])
def test_a_simulated_warp_multiplies_padded_tiles(m, k, n):
    """padded_mma's moves, lane by lane from its plans: pad A, B, C; multiply the
    fragments; crop back into C's own layout; equals numpy's a @ b + c."""
    rng = np.random.default_rng(m * 100 + n)
    a, b, c = rng.integers(-4, 5, (m, k)).astype(float), rng.integers(-4, 5, (k, n)).astype(float), \
        rng.integers(-4, 5, (m, n)).astype(float)
    pm, pk, pn = -(-m // 16) * 16, -(-k // 16) * 16, -(-n // 8) * 8
    la, lb, lc = default_layout((m, k)), default_layout((k, n)), default_layout((m, n))
    fa = _moved(la, Layout("mma_a", (pm, pk)), _held(la, a), pad=True)
    fb = _moved(lb, Layout("mma_b", (pk, pn)), _held(lb, b), pad=True)
    fc = _moved(lc, Layout("mma_c", (pm, pn)), _held(lc, c), pad=True)
    d = _warp_mma(fa, fb, fc, pm, pk, pn)
    out = _moved(Layout("mma_c", (pm, pn)), lc, d, pad=False)
    assert out == _held(lc, a @ b + c)


@xd.jit
def _gemm(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    m, n = xt.program_id(0) * BM, xt.program_id(1) * BN
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [m, k], [BM, BK])),
                          xt.load_tile(xt.init_tile(b, [k, n], [BK, BN])), acc)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN]))


@pytest.mark.parametrize("dt,bm,bn,bk", [("f16", 1, 16, 16), ("f16", 4, 48, 32), ("bf16", 8, 16, 16),
                                         ("i8", 2, 32, 32), ("f32", 4, 16, 8)])
def test_padded_gemm_assembles(dt, bm, bn, bk, tmp_path):
    acc = "i32" if dt == "i8" else "f32"
    sig = {"a": f"{dt}[:,:]", "b": f"{dt}[:,:]", "c": f"{acc}[:,:]", "K": "i32"}
    k = xd.compile(_gemm, sig, {"BM": bm, "BN": bn, "BK": bk, "ACC": getattr(xt, "int32" if dt == "i8" else "float32")},
                   target="sm90")
    # one warp; per K step one mma.sync per 16 x 8 block of the padded C and 16-deep K step
    # (tf32: two m16n8k8 per 16-deep step)
    blocks = (-(-bm // 16)) * (-(-bn // 8)) * (-(-bk // 16)) * (2 if dt == "f32" else 1)
    assert len(re.findall(r"\bmma\.sync\.aligned", k.ptx)) == blocks
    assert "shfl.sync.idx" in k.ptx
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    assert "error" not in report.lower() and "bytes spill stores" in report, report
    if bm * max(bn, bk) <= 32:
        # a [1, 16] row and its [16, 16] B fragment fit; wider padded tiles are replicated in
        # every lane (their columns are no multiple of 32), which spills: correct, not fast
        assert re.search(r"\b0 bytes spill stores", report), report


@xd.jit
def _row_reduce(x, y, BM: xt.constexpr, BN: xt.constexpr, MAX: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN]))
    r = xt.max(v, axis=1) if MAX else xt.min(v, axis=1)
    xt.store_tile(r, xt.init_tile(y, [0, 0], [BM, 1]))


@pytest.mark.parametrize("dt", ["u8", "u32", "i8", "i16", "i64"])
def test_integer_row_reductions_shuffle_32_bit_words(dt, tmp_path):
    """Sub-32-bit values are widened (zero-extended where unsigned) before the butterfly,
    64-bit ones move as two halves; unsigned max compares unsigned."""
    k = xd.compile(_row_reduce, {"x": f"{dt}[:,:]", "y": f"{dt}[:,:]"}, {"BM": 4, "BN": 64, "MAX": True},
                   target="sm90")
    shuffles = len(re.findall(r"shfl\.sync\.bfly\.b32", k.ptx))
    assert shuffles == 4 * 5 * (2 if dt == "i64" else 1)     # 4 rows, 5 butterfly steps
    if dt.startswith("u"):
        assert re.search(r"(setp\.(gt|lt)\.u(16|32)|max\.u(16|32))", k.ptx), "no unsigned compare"
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_a_column_broadcast_into_an_a_fragment_selects_by_lane(check, tmp_path):
    """A [16, 1] scale held whole by every lane (rep), broadcast along the columns into
    A's fragment (lanes placed by row groups): each lane's slots selected from its own
    registers by the lane (``warp_ops.broadcast``'s fallback), no shuffle needed; it
    was refused before."""
    k = xd.compile(check._scaled_rows_mma_kernel, {"a": "f16[:,:]", "s": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]"}, {},
                   target="sm90")
    assert len(re.findall(r"\bmma\.sync\.aligned", k.ptx)) == 2 * 2     # 2 N blocks x 2 K steps
    assert "shfl.sync" not in k.ptx
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_broadcast_sources_name_only_lane_aligned_layouts():
    from_rep = broadcast_sources(Layout("rep", (16, 1)), (1,), Layout("mma_a", (16, 32)))
    from_col = broadcast_sources(Layout("mma_c_col", (16, 1)), (1,), Layout("mma_c", (16, 32)))
    assert from_rep is None and from_col is not None and len(from_col) == len(Layout("mma_c", (16, 32)).slots())
