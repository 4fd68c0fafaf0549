"""A store_tile under a per-element mask (no row edge) stores lane by lane: on the Intel
targets one element a lane of the subgroup, so its columns must be a multiple of the
subgroup (refused at the mask otherwise); a warp of an NVIDIA target stores any width (a
narrow value is held by every lane, and its first copy stores each element)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.targets.target import get_target
from xetile_dsl.targets.nvidia import SM90


@xd.jit
def _masked_row(x, y, n, B: xt.constexpr):
    offs = xt.arange(0, B)
    v = xt.load_tile(xt.init_tile(x, [0], [B]), mask=offs < n, other=0.0)
    xt.store_tile(v * 2.0, xt.init_tile(y, [0], [B]), mask=(offs % 3) != 0)


def test_intel_needs_whole_subgroups_and_says_how_wide():
    lanes = get_target("pvc").masked_store_lanes
    assert lanes == get_target("pvc").subgroup_size == 16
    with pytest.raises(CompilationError, match="make the tile 16 columns wide"):
        xd.compile(_masked_row, {"x": "f32[:]", "y": "f32[:]", "n": "i32"}, {"B": 8}, target="pvc")
    xd.compile(_masked_row, {"x": "f32[:]", "y": "f32[:]", "n": "i32"}, {"B": 16}, target="pvc")


@pytest.mark.parametrize("width", [8, 16, 48])
def test_a_warp_stores_any_width(width):
    assert SM90.masked_store_lanes == 1
    k = xd.compile(_masked_row, {"x": "f32[:]", "y": "f32[:]", "n": "i32"}, {"B": width}, target="sm90")
    assert "st.global.b32" in k.ptx or "st.global.f32" in k.ptx
