"""Reductions of a tile_mma accumulator along its rows on sm90 without a GPU (column sums
and maxima of C, ``warp_ops.reduce``'s ``mma_c`` -> ``mma_c_row`` case), their stores and
atomics by the first thread that holds each element, and a row tile's reduction moved into
a fragment's layout.

Checked here: the butterfly masks against the fragments' lane positions (the layouts every
GPU-run mma kernel uses: a warp simulated in numpy from them gives numpy's column sums in
every lane), the first-holder predicate JIT-compiled for this CPU against the layouts'
geometry (one thread writes each element), and ptxas's assembly of the kernels (shuffle
and barrier counts, no spill).  benchmarks/nv_ops_check.py's "mma column" and "row tile
sums" cases run them on a GPU against float64."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from llvmlite import ir

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx import warp_ops
from xetile_dsl.codegen.nvptx.layouts import Layout
from xetile_dsl.codegen.nvptx.warp_ops import lane_positions
from xetile_dsl.errors import CompilationError

from .host_jit import host_engine
from .test_nvptx_compile import ptxas_report

WARP = 32
STATS_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "s": "f32[:,:]", "t": "f32[:,:]", "K": "i32"}
TOTAL_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "u": "f32[:,:]", "K": "i32"}


@xd.jit
def _old_totals(a, b, u, o, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """The column sums atomically added, and the totals each program saw stored."""
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, k], [BM, BK])),
                          xt.load_tile(xt.init_tile(b, [k, 0], [BK, BN])), acc)
    seen = xt.atomic_rmw("addf", xt.sum(acc, axis=0), xt.init_tile(u, [0, 0], [1, BN]))
    xt.store_tile(seen, xt.init_tile(o, [xt.program_id(0), 0], [1, BN]))


def _bfly_masks(ptx: str) -> list[int]:
    return [int(m) for m in re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+,\s*%r\d+,\s*(\d+),", ptx)]


def test_one_warp_column_sums_fold_the_8_lane_groups(check, tmp_path):
    """A 16 x 16 C tile in one warp: each lane folds its two rows (g, g + 8) in registers,
    then 3 butterfly steps over the groupID bits (xor 4, 8, 16): 4 columns a lane (2 of
    each 8-column block), a sum and a maximum each, 24 shuffles; no partials in shared memory."""
    k = xd.compile(check._col_stats_kernel, STATS_SIG, {"BM": 16, "BN": 16, "BK": 16}, target="sm90")
    masks = _bfly_masks(k.ptx)
    assert sorted(set(masks)) == [4, 8, 16] and len(masks) == 2 * 4 * 3, masks
    assert "nv_partials" not in k.ptx and k.threads == WARP     # no cross-warp partials
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    assert re.search(r"\b0 bytes spill stores", report), report


@pytest.mark.parametrize("bm,bn,bk,warps,grid", [(64, 64, 32, 4, (2, 2)), (128, 128, 32, 8, (4, 2))])
def test_warp_rows_fold_through_shared_memory(check, bm, bn, bk, warps, grid, tmp_path):
    """A C tile split over a warp grid (mma.sync; halved along its longer side: 2 x 2 and
    4 x 2 warps of 32 x 32 and 32 x 64): the lane groups by shuffles, then each warp
    column's warp rows through shared memory (a butterfly over log2(rows) lanes)."""
    k = xd.compile(check._col_stats_kernel, STATS_SIG, {"BM": bm, "BN": bn, "BK": bk}, target="sm90",
                   num_warps=warps)
    assert k.threads == warps * WARP
    masks = _bfly_masks(k.ptx)
    columns = (bn // grid[1]) // 4          # a lane's mma_c_row slots: 2 of each 8 of its warp's columns
    steps = grid[0].bit_length() - 1
    # 2 reductions (sum, max): 3 group steps and log2(warp rows) warp steps each value
    assert masks.count(16) == 2 * columns, masks
    assert len(masks) == 2 * columns * (3 + steps), (len(masks), masks)
    assert len(re.findall(r"\.shared .*nv_partials", k.ptx)) == 2    # one partials array a reduction
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    assert re.search(r"\b0 bytes spill stores", report), report


def test_wgmma_accumulator_column_sums_assemble(check, tmp_path):
    """The wgmma K loop's accumulator (2 warpgroups, an 8 x 1 warp grid of m16 row blocks)
    reduced along its rows: the same lane and warp folds, after the HGMMA loop."""
    k = xd.compile(check._col_stats_kernel, STATS_SIG, {"BM": 128, "BN": 128, "BK": 64}, target="sm90")
    assert "wgmma.mma_async" in k.ptx and k.threads == 256
    report = ptxas_report(k.ptx, "sm_90a", tmp_path)
    assert re.search(r"\b0 bytes spill stores", report), report


@pytest.mark.parametrize("bm,bn,warps", [(16, 16, 1), (64, 32, 4), (32, 64, 2)])
def test_butterfly_over_lane_groups_gives_each_lane_its_column_sums(bm, bn, warps):
    """A warp simulated from the fragments' lane positions: lane l's partial of column j is
    the sum of its mma_c slots in column j; xor 4, 8, 16 then combine the lanes of one
    threadID_in_group; every lane must end with the column sums of its warp's rows at its
    mma_c_row slots (the positions a bias row's lanes hold, GPU-checked)."""
    rng = np.random.default_rng(bm * bn)
    x = rng.standard_normal((bm, bn))
    src = Layout("mma_c", (bm // warps, bn))
    dst = Layout("mma_c_row", (1, bn))
    for w in range(warps):
        part = x[w * (bm // warps):(w + 1) * (bm // warps)]
        held = lane_positions(src)
        partial = [{} for _ in range(WARP)]
        for lane in range(WARP):
            for r, c in held[lane]:
                partial[lane][c] = partial[lane].get(c, 0.0) + part[r, c]
        for mask in (4, 8, 16):
            partial = [{c: v + partial[lane ^ mask][c] for c, v in partial[lane].items()} for lane in range(WARP)]
        for lane, positions in enumerate(lane_positions(dst)):
            got = [partial[lane][c] for _, c in positions]
            np.testing.assert_allclose(got, [part[:, c].sum() for _, c in positions], rtol=1e-12)


def _host_predicate(layout: Layout, fn):
    """``fn(b, lane, layout, warp)`` (an i1 or an i32) compiled for this CPU as
    ``int f(int64 lane, int64 warp)``."""
    module = ir.Module("holder")
    i64, i32 = ir.IntType(64), ir.IntType(32)
    f = ir.Function(module, ir.FunctionType(i32, [i64, i64]), "f")
    b = ir.IRBuilder(f.append_basic_block())
    v = fn(b, f.args[0], layout, f.args[1])
    b.ret(b.zext(v, i32) if v.type.width == 1 else v)
    engine = host_engine(str(module))
    call = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("f"))
    return engine, call


@pytest.mark.parametrize("kind,shape,warps", [("mma_c_row", (1, 64), (4, 2)), ("mma_c_row", (1, 128), (8, 1)),
                                              ("mma_c_col", (64, 1), (4, 1)), ("mma_b_row", (1, 64), (2, 2)),
                                              ("rep", (2, 8), (2, 2)), ("mma_c", (64, 64), (2, 2))])
def test_first_holder_writes_each_element_once(kind, shape, warps):
    """Over every thread of the program, the JIT-compiled predicate is true for exactly
    one holder of each element (the layout's positions offset by its warp's part)."""
    layout = Layout(kind, shape, warps)
    engine, first = _host_predicate(layout, lambda b, lane, lay, warp: warp_ops.first_holder(b, lane, lay, warp)
                                    or ir.Constant(ir.IntType(1), 1))
    step_r, step_c = layout.warp_steps()
    writers: dict = {}
    held = lane_positions(layout)
    for w in range(warps[0] * warps[1]):
        r0, c0 = (w // warps[1]) * step_r, (w % warps[1]) * step_c
        for lane in range(WARP):
            if first(lane, w):
                for r, c in held[lane]:
                    writers.setdefault((r0 + r, c0 + c), []).append((w, lane))
    assert set(writers) == {(r, c) for r in range(shape[0]) for c in range(shape[1])}
    assert all(len(v) == 1 for v in writers.values()), {k: v for k, v in writers.items() if len(v) > 1}
    del engine


@pytest.mark.parametrize("kind", ["mma_c_row", "mma_c_col", "mma_b_row"])
def test_first_copy_lane_holds_the_same_elements(kind):
    """The lane a copy's old atomic value is shuffled from holds the same positions and is
    the first copy of them."""
    layout = Layout(kind, (1, 64) if kind != "mma_c_col" else (64, 1))
    engine, source = _host_predicate(layout, lambda b, lane, lay, warp: warp_ops.first_copy_lane(b, lane, lay))
    _, first = _host_predicate(layout, lambda b, lane, lay, warp: warp_ops.first_copy(b, lane, lay))
    held = lane_positions(layout)
    for lane in range(WARP):
        src = source(lane, 0)
        assert held[src] == held[lane] and first(src, 0), (lane, src)
    del engine


def test_column_sums_atomically_added_once_a_column(check, tmp_path):
    """In 2 x 2 warps, each column's sum is one atomic add by the first lane of warp row 0
    of its warp column: one atom.add a lane's mma_c_row slot (8 of its warp's 32 columns)."""
    k = xd.compile(check._col_total_kernel, TOTAL_SIG, {"BM": 64, "BN": 64, "BK": 32}, target="sm90", num_warps=4)
    atoms = re.findall(r"\b(?:atom|red)\.global\.\w*add\.f32", k.ptx)
    assert len(atoms) == 8, atoms
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_old_values_in_one_warp_are_shuffled_from_the_holder(tmp_path):
    k = xd.compile(_old_totals, {**TOTAL_SIG, "o": "f32[:,:]"}, {"BM": 16, "BN": 16, "BK": 16}, target="sm90")
    assert "shfl.sync.idx" in k.ptx
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_old_values_held_by_several_warps_are_a_located_error():
    with pytest.raises(CompilationError, match=r"old values of an atomic_rmw of a mma_c_row value") as info:
        xd.compile(_old_totals, {**TOTAL_SIG, "o": "f32[:,:]"}, {"BM": 64, "BN": 64, "BK": 32}, target="sm90",
                   num_warps=4)
    assert "test_nvptx_column_reductions.py:" in str(info.value)


def test_row_tile_sums_move_into_the_c_fragment(check, tmp_path):
    """A [32, 32] row tile's row sums (a replicated [32, 1] value) broadcast into C: moved
    into mma_c_col's slots by selection, no shuffle past the row tile's own butterflies."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "x": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    k = xd.compile(check._row_sum_scaled_kernel, sig, {"BM": 32, "BN": 32, "BK": 16, "W": 32}, target="sm90")
    assert len(re.findall(r"\bmma\.sync\.aligned", k.ptx)) == 2 * 4
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    assert re.search(r"\b0 bytes spill stores", report), report


@pytest.mark.parametrize("bm,bn,warps", [(16, 16, None), (64, 64, 4), (128, 128, 8)])
def test_whole_accumulator_totals_fold_every_lane_and_warp(check, bm, bn, warps, tmp_path):
    """``xt.sum(acc)`` / ``xt.max(acc)`` (the rows' statistics, then theirs): a [1, 1]
    value every thread holds, so the program keeps its grid of warp rows (one m16 block
    of 16 rows each, or num_warps of them); per reduction the lane's 2 rows by xor 1, 2,
    then the 8 groups by xor 4, 8, 16, then the warp rows' partials through one shared
    array; the atomic total is one atom.add, by lane 0 of warp 0."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "s": "f32[:,:]", "t": "f32[:,:]", "u": "f32[:,:]", "K": "i32"}
    k = xd.compile(check._acc_total_kernel, sig, {"BM": bm, "BN": bn, "BK": 16}, target="sm90",
                   **({"num_warps": warps} if warps else {}))
    n = warps or 1
    assert k.threads == n * WARP
    rows = bm // n // 16 * 2                   # a lane's rows of its warp's part: g, g + 8 of each block
    one = [1, 2] * rows + [4, 8, 16] + [1 << i for i in reversed(range(n.bit_length() - 1))]
    assert _bfly_masks(k.ptx) == one + one, _bfly_masks(k.ptx)        # the sum (the atomic's too), the max
    assert len(re.findall(r"\.shared .*nv_partials", k.ptx)) == (2 if n > 1 else 0)
    assert len(re.findall(r"\b(?:atom|red)\.global\.\w*add\.f32", k.ptx)) == 1
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    # (one warp: ptxas keeps 64 registers and spills a word of the staged K loop)
    assert n == 1 or re.search(r"\b0 bytes spill stores", report), report


@xd.jit
def _narrow_old(x, y, total, old):
    acc = xt.tile_mma(xt.load_tile(xt.init_tile(x, [0, 0], [64, 64])), xt.load_tile(xt.init_tile(y, [0, 0], [64, 64])))
    seen = xt.atomic_rmw("addf", xt.sum(acc), xt.init_tile(total, [0, 0], [1, 1]))
    xt.store_tile(seen, xt.init_tile(old, [0, 0], [1, 1]))


def test_old_value_of_a_narrow_atomic_in_several_warps_is_a_located_error():
    with pytest.raises(CompilationError, match=r"old values of an atomic_rmw of a narrow tile") as info:
        xd.compile(_narrow_old, {"x": "f16[:,:]", "y": "f16[:,:]", "total": "f32[:,:]", "old": "f32[:,:]"}, {}, target="sm90",
                   num_warps=4)
    assert "test_nvptx_column_reductions.py:" in str(info.value)
    k = xd.compile(_narrow_old, {"x": "f16[:,:]", "y": "f16[:,:]", "total": "f32[:,:]", "old": "f32[:,:]"}, {},
                   target="sm90", num_warps=1)
    assert k.threads == WARP and "shfl.sync.idx" in k.ptx       # one warp: lane 0's old value to every lane
