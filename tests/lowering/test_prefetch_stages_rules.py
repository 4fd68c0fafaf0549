"""xetile-prefetch-stages through the opt tool: XeTile MLIR in (the frontend's K loops),
the prefetched tile's starting offset out -- ``num_stages - 1`` K steps after the loaded
tile of the same array -- for subgroup-level and workgroup-level (wg_map) kernels; loops
that do not qualify are left as written."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from tests.lowering.test_lowering_rules import opt
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import print_module
from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel

from tests.e2e.test_launch_options import CONST, SIG, prefetched_gemm


def _inits_of_a(text: str) -> list[str]:
    """The K offset operand's constant of each init_tile over %a, in order."""
    constants = dict(re.findall(r"(%\w+) = arith.constant (-?\d+) : index", text))
    return [constants.get(k) for k in re.findall(r"xetile.init_tile %a\[[^,\]]+, (%\w+)\]", text)]


@pytest.mark.parametrize("stages, start", [(1, "0"), (2, "16"), (4, "48")])
def test_a_subgroup_level_prefetch_moves(tmp_path, stages, start):
    text = print_module(to_xetile(prefetched_gemm, SIG, CONST))
    assert _inits_of_a(text) == ["0", "32"]                       # the kernel's PF = 2
    out = opt(tmp_path, text, f"xetile-prefetch-stages{{num_stages={stages}}}")
    assert _inits_of_a(out) == ["0", start]


def test_the_rfc_workgroup_gemm_prefetch_moves(tmp_path):
    """RFC 2.1 prefetches 3 K steps ahead with its own cooperative wg_maps."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    text = print_module(to_xetile(gemm_prefetch_kernel, sig, {"BM": 256, "BN": 256, "BK": 32, "PF": 3}))
    assert _inits_of_a(text) == ["0", "96"]
    out = opt(tmp_path, text, "xetile-prefetch-stages{num_stages=2}")
    assert _inits_of_a(out) == ["0", "32"]
    assert out.count("xetile.prefetch_tile") == text.count("xetile.prefetch_tile") == 2
    assert "sg_layout = [32, 1]" in out                          # the prefetch keeps its own map


@xd.jit
def runtime_distance(a, b, c, K, PFK, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """A prefetch whose start is a runtime value: its distance is unknown to the pass."""
    m = xt.program_id(0) * BM
    ta = xt.init_tile(a, [m, 0], [BM, BK])
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    pa = xt.init_tile(a, [m, PFK], [BM, BK])
    acc = xt.zeros([BM, BN], xt.float32)
    for _ in range(0, K, BK):
        xt.prefetch_tile(pa)
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, 0, BK)
    xt.store_tile(acc, xt.init_tile(c, [m, 0], [BM, BN]))


def test_a_prefetch_from_a_runtime_offset_stays(tmp_path):
    text = print_module(to_xetile(runtime_distance, {**SIG, "PFK": "i32"}, {"BM": 16, "BN": 16, "BK": 16}))
    out = opt(tmp_path, text, "xetile-prefetch-stages{num_stages=4}")
    assert _inits_of_a(out) == _inits_of_a(text) == ["0", None]
