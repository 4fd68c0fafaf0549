"""Narrow rows in PVC machine code (issue 17 item 1): a GEMM specialised for a C with rows
of 12 f32 (48 bytes, under the 64-byte minimum of 2D block messages) stores C with
per-lane messages and no store_block2d, while the same kernel for wide rows stores C with
2D blocks; the ISA report names the per-lane array."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
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
