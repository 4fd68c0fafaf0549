"""Named barriers for SLM exchanges inside groups of subgroups (lowering/analysis/sg_groups.py,
lowering/passes/wg_to_sg/exchange_barriers.py): opt-tool MLIR input -> the XeGPU IR with
alloc_nbarrier / init_nbarrier / nbarrier_arrive / nbarrier_wait where the exchange stays
inside independent groups and the target has the ids; gpu.barrier otherwise (ARC, an
exchange that connects every subgroup, more groups than ids)."""
from __future__ import annotations

import re

import pytest

from tests.lowering.test_lowering_rules import opt, tile, wg
from xetile_dsl.dialects import xetile
from xetile_dsl.lowering.analysis.sg_groups import Groups, Region, components, exchange_groups, regular_groups

GRID = wg((8, 4), (16, 16))
TO_XEGPU = "xetile-wg-to-sg{{target={t}}},xetile-sg-transpose{{target={t}}},xetile-blocking{{target={t}}}," \
           "convert-xetile-to-xegpu,xegpu-sink-to-uses"


def _kernel(body: str, ins: str, shape=(128, 64)) -> str:
    return f"""
func.func @k(%a: memref<1024x1024xf32>) {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf32> -> {ins}
  %v = xetile.load_tile %t : {ins} -> vector<{shape[0]}x{shape[1]}xf32>
{body}
  func.return
}}"""


ROW_REDUCE = f"  %r = xetile.tile_reduce <add> %v [1] {{wg_map = {wg((8, 4), (16, 1))}}} : vector<128x64xf32> -> " \
             "vector<128x1xf32>"
COL_REDUCE = f"  %s = xetile.tile_reduce <add> %v [0] {{wg_map = {wg((8, 4), (1, 16))}}} : vector<128x64xf32> -> " \
             "vector<1x64xf32>"
INS = tile((128, 64), "f32", GRID)


def _between(out: str, first: str, second: str) -> str:
    return out[out.index(first):out.index(second)]


def test_row_reduce_over_8x4_uses_a_named_barrier_per_grid_row(tmp_path):
    """Reduce [1] of [8, 4]x[16, 16]: the 4 subgroups of a grid row exchange their partials
    (128x4 in SLM), so barrier id sg_id / 4 + 1 with 4 participants, 8 ids in all."""
    out = opt(tmp_path, _kernel(ROW_REDUCE, INS), TO_XEGPU.format(t="pvc"))
    assert "gpu.barrier" not in out
    assert out.count("xegpu.alloc_nbarrier 8") == 1
    assert re.search(r"%nb_group = arith.divsi %sg_id, %(\w+) : index", out)
    group = re.search(r"%nb_group = arith.divsi %sg_id, %(\w+)", out).group(1)
    assert re.search(rf"%{group} = arith.constant 4 : index", out)
    assert re.search(r"= arith.addi %nb_group, %\w+ : index\n\s*%nb_id = arith.index_cast %\w+ : index to i8", out)
    assert "%nb_count = arith.constant 4 : i8" in out
    assert out.count("%nb = xegpu.init_nbarrier %nb_id, %nb_count : i8, i8 -> !xegpu.nbarrier") == 1
    # partials stored to SLM, then arrive + wait, then the loads of the 4 partial columns
    exchange = out[out.index("xegpu.store_nd"):]
    assert exchange.index("xegpu.nbarrier_arrive %nb") < exchange.index("xegpu.nbarrier_wait %nb") \
        < exchange.index("xegpu.load_nd")
    assert out.count("xegpu.nbarrier_arrive") == out.count("xegpu.nbarrier_wait") == 1


def test_column_reduce_over_8x4_uses_a_named_barrier_per_grid_column(tmp_path):
    """Reduce [0]: the 8 subgroups of a grid column exchange, id sg_id mod 4 + 1, 8 participants."""
    out = opt(tmp_path, _kernel(COL_REDUCE, INS), TO_XEGPU.format(t="pvc"))
    assert "gpu.barrier" not in out and out.count("xegpu.alloc_nbarrier 4") == 1
    assert re.search(r"%nb_group = arith.remsi %sg_id, %\w+ : index", out)
    assert "%nb_count = arith.constant 8 : i8" in out
    assert out.count("xegpu.nbarrier_arrive %nb") == out.count("xegpu.nbarrier_wait %nb") == 1


def test_two_groupings_get_distinct_ids(tmp_path):
    """Both reduces in one kernel: rows take ids 1..8, columns 9..12 (12 allocated)."""
    out = opt(tmp_path, _kernel(ROW_REDUCE + "\n" + COL_REDUCE, INS), "xetile-wg-to-sg{target=pvc}")
    assert out.count("xegpu.alloc_nbarrier 12") == 1 and "gpu.barrier" not in out
    assert out.count("xegpu.init_nbarrier") == 2
    bases = re.findall(r"= arith.addi %nb_group\w*, %(\w+) : index", out)
    values = [re.search(rf"%{b} = arith.constant (\d+) : index", out).group(1) for b in bases]
    assert values == ["1", "9"]
    assert "%nb_count = arith.constant 4 : i8" in out and re.search(r"arith.constant 8 : i8", out)


@pytest.mark.parametrize("body", [ROW_REDUCE, COL_REDUCE], ids=["rows", "cols"])
def test_arc_has_no_named_barriers_and_keeps_gpu_barrier(tmp_path, body):
    out = opt(tmp_path, _kernel(body, INS), TO_XEGPU.format(t="arc"))
    assert out.count("gpu.barrier") == 1 and "nbarrier" not in out


def test_an_exchange_among_all_subgroups_keeps_gpu_barrier(tmp_path):
    """Row bands [4, 1] -> column bands [1, 4]: every subgroup reads from every other."""
    body = f"  %r = xetile.tile_conv_layout %v {{wg_map = {wg((1, 4), (64, 16))}}} : vector<64x64xf32> -> " \
           "vector<64x64xf32>"
    out = opt(tmp_path, _kernel(body, tile((64, 64), "f32", wg((4, 1), (16, 64))), (64, 64)),
              "xetile-wg-to-sg{target=pvc}")
    assert out.count("gpu.barrier") == 1 and "nbarrier" not in out


def test_conversion_inside_groups_in_a_loop_names_both_barriers(tmp_path):
    """[4, 1]x[16, 32] -> [2, 2]x[32, 32] (the coop GEMM's A): subgroups 0, 1 write rows
    0..31, which subgroups 0, 1 read: 2 groups of 2.  In a loop the barrier that keeps the
    stores after the previous iteration's reads is the same named barrier."""
    src, dst = wg((4, 1), (16, 32)), wg((2, 2), (32, 32))
    ins = tile((64, 32), "f32", src)
    text = f"""
func.func @k(%a: memref<1024x1024xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf32> -> {ins}
  scf.for %i = %c0 to %n step %c1 {{
    %v = xetile.load_tile %t : {ins} -> vector<64x32xf32>
    %w = xetile.tile_conv_layout %v {{wg_map = {dst}}} : vector<64x32xf32> -> vector<64x32xf32>
    scf.yield
  }}
  func.return
}}"""
    out = opt(tmp_path, text, "xetile-wg-to-sg{target=pvc}")
    assert "gpu.barrier" not in out and out.count("xegpu.alloc_nbarrier 2") == 1
    assert "%nb_count = arith.constant 2 : i8" in out and re.search(r"%nb_group = arith.divsi %sg_id", out)
    loop = out[out.index("scf.for"):]
    assert loop.count("xegpu.nbarrier_arrive %nb") == 2 and loop.count("xegpu.nbarrier_wait %nb") == 2
    assert "xegpu.init_nbarrier" not in loop  # initialised once, before the loop


def _transpose_kernel(layout_rows: int) -> str:
    """A computed 32-column tile transposed per subgroup: each subgroup reads back only
    what it wrote (``layout_rows`` groups of one)."""
    rows = 8 * layout_rows
    src, dst = wg((layout_rows, 1), (8, 32)), wg((1, layout_rows), (32, 8))
    body = f"""  %w = arith.addf %v, %v : vector<{rows}x32xf32>
  %r = xetile.tile_transpose %w {{wg_map = {dst}}} : vector<{rows}x32xf32> -> vector<32x{rows}xf32>"""
    return _kernel(body, tile((rows, 32), "f32", src), (rows, 32))


def test_transpose_through_slm_per_subgroup_uses_one_barrier_per_subgroup(tmp_path):
    out = opt(tmp_path, _transpose_kernel(8), "xetile-wg-to-sg{target=pvc}")
    assert "gpu.barrier" not in out and out.count("xegpu.alloc_nbarrier 8") == 1
    assert "%nb_count = arith.constant 1 : i8" in out


def test_more_groups_than_named_barrier_ids_fall_back_to_gpu_barrier(tmp_path):
    """32 groups of one need ids 1..32; pvc has 31 (id 0 is the workgroup barrier)."""
    out = opt(tmp_path, _transpose_kernel(32), "xetile-wg-to-sg{target=pvc}")
    assert out.count("gpu.barrier") == 1 and "nbarrier" not in out


# --- the analysis itself --------------------------------------------------------------------
def _map(layout, data) -> xetile.WgMapAttr:
    return xetile.WgMapAttr(tuple(layout), tuple(data))


def test_components_of_a_row_exchange():
    """Partials [8, 4]x[16, 1] over 128x4, read back as whole rows [8, 4]x[16, 4]."""
    labels = components(32, (128, 4), Region(_map((8, 4), (16, 1)), (128, 4)),
                        Region(_map((8, 4), (16, 4)), (128, 4)))
    assert [len({labels[s] for s in range(r * 4, r * 4 + 4)}) for r in range(8)] == [1] * 8
    assert len(set(labels)) == 8
    assert regular_groups(labels) == Groups(step=4, count=8, size=4)


def test_regular_groups_recognises_columns_and_rejects_irregular_partitions():
    assert regular_groups([s % 4 for s in range(32)]) == Groups(step=1, count=4, size=8)
    assert regular_groups([0] * 32) is None  # one group: the workgroup barrier
    assert regular_groups([0, 0, 0, 1, 1, 1, 2, 2]) is None  # unequal sizes
    assert regular_groups([0, 1, 1, 0]) is None  # not of the (sg / step) mod count form


def test_transposed_reads_swap_rows_and_columns():
    """A [4, 1]x[8, 32] source read as the transpose with [1, 4]x[32, 8]: each subgroup reads
    its own rows back as columns."""
    src = Region(_map((4, 1), (8, 32)), (32, 32))
    own = Region(_map((1, 4), (32, 8)), (32, 32), transposed=True)
    assert exchange_groups(4, (32, 32), src, own) == Groups(step=1, count=4, size=1)
    other = Region(_map((1, 4), (32, 8)), (32, 32))  # read untransposed: everyone's rows
    assert exchange_groups(4, (32, 32), src, other) is None
