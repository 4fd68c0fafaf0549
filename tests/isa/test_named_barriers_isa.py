"""Named barriers generated for SLM exchanges inside groups of subgroups, compiled by
Intel's offline compiler for pvc, bmg and lnl: one ``sync.bar <id>`` per group (IGC numbers the
barriers 1, 2, ... in the order of their ``named_barrier_init``), ``barrier_count``
covering them, no spills; dg2-g10 (ARC) keeps the workgroup barrier."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from xetile_dsl.kernels import workgroup_slm as W
from xetile_dsl.tools import ocloc

F32_IO = {"a": "f32[:,:]", "out": "f32[:,:]"}
GEMM_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "rowsum": "f32[:,:]", "K": "i32"}
CASES = [
    (W.grid_row_sum_kernel, F32_IO, {}, 8, 128 * 4 * 4),  # 8 grid rows of 4 subgroups, 128x4 partials
    (W.grid_col_sum_kernel, F32_IO, {}, 4, 8 * 64 * 4),  # 4 grid columns of 8, 8x64 partials
    (W.gemm_rowsum_kernel, GEMM_SIG, {"BK": 32}, 2, 64 * 2 * 4),  # [2, 2]: 2 rows of 2, 64x2 partials
]
#: IGC's barrier_count: the named barriers plus id 0, rounded up to 1, 2, 4, 8, 16, 24 or 32
BARRIER_COUNT = {8: 16, 4: 8, 2: 4}
IDS = ["grid_rows", "grid_cols", "gemm_rowsum"]


def _compiled(fn, sig, consts, target):
    kernel = xd.compile(fn, sig, consts, target=target)
    name = fn.__name__
    zebin = kernel.asm["zebin"]
    return kernel.asm["isa"], zebin.execution_env(name), ocloc.check_isa(zebin, name, expect_dpas="gemm" in name)


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl"])
@pytest.mark.parametrize("fn,sig,consts,groups,slm_bytes", CASES, ids=IDS)
def test_one_sync_bar_per_group(ocloc_path, fn, sig, consts, groups, slm_bytes, target):
    isa, env, problems = _compiled(fn, sig, consts, target)
    assert problems == []  # includes: no spill, no unresolved calls, SIMD16
    assert env["slm_size"] == slm_bytes
    assert env["barrier_count"] == BARRIER_COUNT[groups]
    # the wait is a switch on the group's id: one signal + sync.bar per group, no workgroup barrier
    assert sorted(int(i) for i in re.findall(r"\bsync\.bar\s+(\w+)", isa)) == list(range(1, groups + 1))
    assert ocloc.count(isa, r"\bsignal barrier\b") == groups


@pytest.mark.parametrize("fn,sig,consts,groups,slm_bytes", CASES, ids=IDS)
def test_arc_keeps_the_workgroup_barrier(ocloc_path, fn, sig, consts, groups, slm_bytes):
    isa, env, problems = _compiled(fn, sig, consts, "arc")
    assert problems == [] and env["slm_size"] == slm_bytes and env["barrier_count"] == 1
    assert ocloc.count(isa, r"\bsync\.bar\b") == 1
