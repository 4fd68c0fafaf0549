"""load_tile and load_gather padding values on sm90 without a GPU: the slots outside the
array (or masked off) take the padding constant by a select after the loads; the kernels
are benchmarks/nv_ops_check.py's padding cases (which run them on a GPU, and in the
interpreter here: tests/ops/test_nv_ops_check.py's machinery)."""
from __future__ import annotations

import re

import xetile_dsl as xd

from .test_nvptx_compile import ptxas_report


def test_load_tile_padding_selects_outside_the_array(check, tmp_path):
    k = xd.compile(check._padded_softmax_kernel, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": 8, "BN": 256},
                   target="sm90")
    # -inf (0fFF800000) chosen for each of a lane's 8 x 256 / 32 = 64 slots outside the array
    assert "0fFF800000" in k.ptx
    assert len(re.findall(r"selp\.f32\s+%[rf]\d+, %[rf]\d+, 0fFF800000, %p\d+;", k.ptx)) >= 64
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_load_gather_padding(check):
    k = xd.compile(check._padded_gather_kernel, {"x": "f32[:]", "y": "f32[:,:]", "N": "i32"}, {}, target="sm90")
    assert "0f40E00000" in k.ptx        # 7.0
