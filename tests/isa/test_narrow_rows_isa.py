"""Narrow rows in PVC machine code: a GEMM specialised for a C with rows
of 12 f32 (48 bytes, under the 64-byte minimum of 2D block messages) stores C with
per-lane messages and no store_block2d, while the same kernel for wide rows stores C with
2D blocks; the ISA report names the per-lane array."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.matmul import matmul_kernel
from conftest_tools import require_ocloc
from xetile_dsl.tools import ocloc

TILES = {"BM": 32, "BN": 32, "BK": 16}


@pytest.fixture(scope="module")
def kernels():
    require_ocloc()
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "K": "i32"}
    return {c: xd.compile(matmul_kernel, {**sig, "c": c}, TILES, target="pvc") for c in ("f32[:,:]", "f32[:,12]")}


def test_narrow_c_is_stored_per_lane(kernels):
    wide, narrow = kernels["f32[:,:]"].asm["isa"], kernels["f32[:,12]"].asm["isa"]
    assert ocloc.count(wide, ocloc.STORE_BLOCK2D) >= 1
    assert ocloc.count(narrow, ocloc.STORE_BLOCK2D) == 0
    assert ocloc.count(narrow, r"\bstore\.ugm") >= 1          # the per-lane (scattered) stores


def test_the_report_and_abi_name_the_per_lane_array(kernels):
    narrow = kernels["f32[:,12]"]
    assert narrow.report().per_lane_arrays == ["c"]
    assert "per-lane loads/stores for c" in str(narrow.report())
    assert kernels["f32[:,:]"].report().per_lane_arrays == []
    assert {p.name: p.block2d for p in narrow.abi.params if hasattr(p, "block2d")}["c"] is False



@xd.jit
def _copy_rows(x, y):
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [8, 32])), xt.init_tile(y, [0, 0], [8, 32]))


@pytest.mark.parametrize("row,per_lane", [("f16[:,37]", True), ("f16[:,38]", False), ("i8[:,66]", True),
                                          ("i8[:,68]", False), ("f32[:,17]", False), ("f16[:,20]", True)])
def test_rows_of_no_whole_dword_are_per_lane(row, per_lane):
    """8/16-bit data must span a whole number of 4-byte units to be a 2D block surface's
    width (the Xe codegen reference, surface rules): 37 x f16 = 74 bytes is over the 64-byte
    minimum but is specialised per lane all the same (a transposed 32-bit read of such a
    surface dropped its last column); 17 x f32 is a whole number of dwords."""
    elem = row.split("[")[0]
    kernel = xd.compile(_copy_rows, {"x": row, "y": f"{elem}[:,:]"}, target="pvc")
    assert ("x" in kernel.abi.extra.get("per_lane_arrays", [])) is per_lane
    assert "y" not in kernel.abi.extra.get("per_lane_arrays", [])
