"""Workgroup programs with SLM exchanges, compiled by Intel's offline compiler: the
barrier (``sync.bar``, ``barrier_count``), the SLM buffer (``slm_size`` in .ze_info),
SLM messages, and no spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from xetile_dsl.kernels import workgroup_slm as W
from xetile_dsl.tools import ocloc

F32_IO = {"a": "f32[:,:]", "c": "f32[:,:]"}
GEMM_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "rowsum": "f32[:,:]", "K": "i32"}


def _compiled(fn, sig, consts, target):
    kernel = xd.compile(fn, sig, consts, target=target)
    name = fn.__name__
    zebin = kernel.asm["zebin"]
    return kernel.asm["isa"], zebin.execution_env(name), ocloc.check_isa(zebin, name, expect_dpas="gemm" in name)


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl"])
@pytest.mark.parametrize("fn,sig,consts,slm_bytes", [
    (W.conv_layout_kernel, F32_IO, {}, 64 * 64 * 4),
    (W.col_max_kernel, {"a": "f32[:,:]", "out": "f32[:,:]"}, {}, 4 * 64 * 4),
], ids=["conv_layout", "col_max"])
def test_slm_exchange_isa(ocloc_path, fn, sig, consts, slm_bytes, target):
    isa, env, problems = _compiled(fn, sig, consts, target)
    assert problems == []  # includes: no spill, no unresolved calls, SIMD16
    assert env["slm_size"] == slm_bytes and env["barrier_count"] == 1
    assert ocloc.count(isa, r"\bsync\.bar\b") == 1
    assert re.search(r"\bstore\.slm\b", isa) and re.search(r"\bload\.slm\b", isa)


def test_rfc_row_reduction_needs_no_slm_pvc(ocloc_path):
    """Each subgroup owns whole rows: no buffer, no barrier."""
    isa, env, problems = _compiled(W.row_sum_kernel, {"a": "f32[:,:]", "out": "f32[:,:]"}, {}, "pvc")
    assert problems == [] and env.get("slm_size", 0) == 0 and env.get("barrier_count", 0) == 0
    assert "sync.bar" not in isa


def test_conv_layout_isa_arc(ocloc_path):
    isa, env, problems = _compiled(W.conv_layout_kernel, F32_IO, {}, "arc")
    assert problems == [] and env["slm_size"] == 64 * 64 * 4 and env["barrier_count"] == 1
    assert ocloc.count(isa, r"\bsync\.bar\b") == 1


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl"])
def test_cooperative_gemm_isa(ocloc_path, target):
    """Operands staged through SLM count towards the GRF budget: 256-GRF mode, no spill;
    per K step 2 x 2 x 2 x 2 = 16 DPAS and two barriers per exchange: A's stays inside the
    grid rows of [2, 2] (named barriers 1 and 2, each wait a switch of two ``sync.bar``),
    B's connects every subgroup (``sync.bar 0x0``, the workgroup barrier)."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    kernel = xd.compile(W.gemm_coop_kernel, sig, {"BK": 32}, target=target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, "gemm_coop_kernel", expect_dpas=True) == []
    env = zebin.execution_env("gemm_coop_kernel")
    assert env["grf_count"] == 256 and env["slm_size"] == 2 * 64 * 32 * 2 and env["barrier_count"] == 4
    loop = ocloc.hot_loop(kernel.asm["isa"])
    assert ocloc.count(loop, ocloc.DPAS) == 16
    assert sorted(re.findall(r"\bsync\.bar\s+(\w+)", loop)) == ["0x0", "0x0", "1", "1", "2", "2"]


def test_gemm_rowsum_isa_arc_does_not_spill(ocloc_path):
    """dg2-g10, 256 GRFs: the 32x32 f32 accumulator (4 KB) plus a whole K step of A and B
    (2 KB each) filled the 8 KB register file; with each load sunk to its first DPAS (and
    DPAS in K-outer order) only one K block of operands is live.  Before: 3456 bytes spilled."""
    isa, env, problems = _compiled(W.gemm_rowsum_kernel, GEMM_SIG, {"BK": 32}, "arc")
    assert problems == []  # includes: no spill, no unresolved calls, SIMD8
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    assert env["slm_size"] == 64 * 2 * 4 and env["barrier_count"] == 1  # conv + reduce: the 64x2 partials
    assert ocloc.count(ocloc.hot_loop(isa), ocloc.DPAS) >= 4 * 4 * 2  # (32/8) x (32/8) x (32/16) per K step
