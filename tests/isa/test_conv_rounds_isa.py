"""tile_conv_layout in rounds of row chunks (lowering/passes/wg_to_sg/conv_rounds.py), compiled by
Intel's offline compiler: the chunk buffer (``slm_size``), the two barriers of a round
(``sync.bar``), SLM messages, spills."""
from __future__ import annotations

import re

import xetile_dsl as xd
from xetile_dsl.kernels import workgroup_slm as W
from xetile_dsl.tools import ocloc

F32_IO = {"a": "f32[:,:]", "c": "f32[:,:]"}


def _compiled(fn, consts, target):
    kernel = xd.compile(fn, F32_IO, consts, target=target)
    name = fn.__name__
    zebin = kernel.asm["zebin"]
    return kernel.asm["isa"], zebin.execution_env(name), ocloc.check_isa(zebin, name, expect_dpas=False)


def test_1mib_conversion_rounds_loop_pvc(ocloc_path):
    """512x512 f32 over 32 subgroups: a 64x512 f32 chunk (128 KiB, all of PVC's SLM), the
    8 rounds stay a loop whose body holds the round's two barriers and its SLM stores and
    loads. Each subgroup holds 32 KiB of source and 32 KiB of result pieces, more than a
    register file (8 / 16 KiB), so this kernel spills whatever the exchange."""
    isa, env, problems = _compiled(W.conv_rounds_kernel, {}, "pvc")
    assert env["slm_size"] == 64 * 512 * 4 and env["barrier_count"] == 1
    assert [p for p in problems if not p.startswith("register spill")] == []
    loop = ocloc.hot_loop(isa)
    assert ocloc.count(loop, r"\bsync\.bar\b") == 2 == ocloc.count(isa, r"\bsync\.bar\b")
    assert re.search(r"\bstore\.slm\b", loop) and re.search(r"\bload\.slm\b", loop)


def test_rounds_next_to_the_kernels_own_slm_pvc(ocloc_path):
    """96 KiB of the kernel's own + a 64x128 f32 chunk (32 KiB) = 128 KiB; no spills; the
    kernel's barrier and 2 rounds x 2 barriers (IGC unrolls the two-round loop)."""
    isa, env, problems = _compiled(W.conv_rounds_after_slm_kernel, {"TM": 128, "ROWS": 192}, "pvc")
    assert problems == []
    assert env["slm_size"] == 192 * 128 * 4 + 64 * 128 * 4 == 128 * 1024
    assert ocloc.count(isa, r"\bsync\.bar\b") == 1 + 2 * 2


def test_rounds_next_to_the_kernels_own_slm_arc(ocloc_path):
    """ARC (dg2-g10): 48 KiB of the kernel's own + a 32x128 f32 chunk (16 KiB) = 64 KiB."""
    isa, env, problems = _compiled(W.conv_rounds_after_slm_kernel, {"TM": 64, "ROWS": 96}, "arc")
    assert problems == []
    assert env["slm_size"] == 96 * 128 * 4 + 32 * 128 * 4 == 64 * 1024
    assert ocloc.count(isa, r"\bsync\.bar\b") == 1 + 2 * 2
