"""Workgroup-level kernels (``wg_map``) on sm90 without a GPU: after the shared
distribution pass each subgroup is a warp of the program (``gpu.subgroup_id`` its index),
shared local memory is the program's dynamic shared memory, ``gpu.barrier`` is
``bar.sync 0`` and XeGPU's named barriers are PTX's numbered ones over their warps.  The
PTX is checked here and by ptxas; the values on the H200 by ``benchmarks/nv_ops_check.py
workgroup`` (every case exact)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels import workgroup_slm as W
from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel, gemm_wg_kernel
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

F32_IO = {"a": "f32[:,:]", "out": "f32[:,:]"}
F32_AC = {"a": "f32[:,:]", "c": "f32[:,:]"}
GEMM = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
ROWSUM = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "rowsum": "f32[:,:]", "K": "i32"}

#: kernel, signature, constants, subgroups, shared local memory bytes, barriers:
#: (bar.sync 0 count, named barrier syncs)
CASES = {
    "conv_layout": (W.conv_layout_kernel, F32_AC, {}, 4, 64 * 64 * 4, (1, 0)),
    "row_sum": (W.row_sum_kernel, F32_IO, {}, 32, 0, (0, 0)),
    "col_max": (W.col_max_kernel, F32_IO, {}, 4, 4 * 64 * 4, (1, 0)),
    "grid_row_sum": (W.grid_row_sum_kernel, F32_IO, {}, 32, 128 * 4 * 4, (0, 1)),
    "big_conv": (W.big_conv_kernel, F32_AC, {}, 16, 256 * 128 * 4, (None, None)),
    "gemm_coop": (W.gemm_coop_kernel, GEMM, {"BK": 32}, 4, None, (None, None)),
    "gemm_rowsum": (W.gemm_rowsum_kernel, ROWSUM, {"BK": 32}, 4, None, (0, 1)),
    "gemm_wg": (gemm_wg_kernel, GEMM, dict(BM=128, BN=128, BK=32, SM=2, SN=2, PF=2, ACC=xt.float32), 4, 0, (0, 0)),
    "gemm_prefetch": (gemm_prefetch_kernel, GEMM, dict(BM=256, BN=256, BK=32, PF=3), 32, 0, (0, 0)),
}
NAMED = re.compile(r"bar\.sync %r\d+, %r\d+;")


@pytest.mark.parametrize("name", CASES)
def test_workgroup_kernels_take_a_warp_a_subgroup(name, tmp_path):
    fn, sig, consts, subgroups, slm, (plain, named) = CASES[name]
    k = xd.compile(fn, sig, consts, target="sm90")
    assert k.threads == subgroups * SM90.warp_size
    assert f".maxntid {k.threads}" in k.ptx
    if slm is not None:
        assert k.smem_bytes == slm
    assert (k.smem_bytes > 0) == ("ld.shared" in k.ptx) == ("st.shared" in k.ptx)
    if plain is not None:
        assert k.ptx.count("bar.sync 0;") == plain and len(NAMED.findall(k.ptx)) == named
    if subgroups > 1 and name not in ("big_conv",):      # (big_conv's 16 bands: one of them is subgroup 0)
        assert "%tid.x" in k.ptx
    assert "mma.sync" in k.ptx or not name.startswith("gemm")
    report = ptxas_report(k.ptx, k.ptx_arch or SM90.ptx_arch, tmp_path)
    assert "error" not in report.lower()
    used = int(re.search(r"Used (\d+) registers", report).group(1))
    assert used <= min(SM90.regs_per_thread, SM90.regs_per_sm // k.threads)


@pytest.mark.parametrize("name", ["conv_layout", "col_max", "big_conv"])
def test_shared_local_memory_is_the_dynamic_region(name):
    """The SLM buffer of the distribution pass is an offset into the program's dynamic
    shared memory (the launch raises the block's limit to ``smem_bytes``), not a static
    ``.shared`` array (at most 48 KB a block)."""
    fn, sig, consts, *_ = CASES[name]
    ptx = xd.compile(fn, sig, consts, target="sm90").ptx
    assert ".extern .shared .align 16 .b8 nv_smem[];" in ptx
    assert not re.search(r"^\.shared .*nv_slm", ptx, re.M)


@pytest.mark.parametrize("name", ["col_max", "grid_row_sum", "gemm_coop"])
def test_workgroup_kernels_build_for_sm80(name, tmp_path):
    """The same kernels for sm80 (mma.sync only): the warps, the shared memory, ptxas."""
    from xetile_dsl.targets.nvidia import SM80
    fn, sig, consts, subgroups, *_ = CASES[name]
    k = xd.compile(fn, sig, consts, target="sm80")
    assert k.threads == subgroups * SM80.warp_size and k.smem_bytes > 0
    assert "error" not in ptxas_report(k.ptx, SM80.ptx_arch, tmp_path).lower()


@xd.jit
def _too_many_warps_kernel(a):
    t = xt.init_tile(a, [0, 0], [256, 256], wg_map=xt.wg_map(sg_layout=[16, 4], sg_data=[16, 64]))
    xt.store_tile(xt.load_tile(t) * 2.0, t)


def test_a_workgroup_of_more_than_32_warps_is_refused():
    with pytest.raises(CompilationError) as info:
        xd.compile(_too_many_warps_kernel, {"a": "f32[:,:]"}, {}, target="sm90")
    text = str(info.value)
    assert "64 subgroups is 64 warps, more than the 32 of a block on sm90" in text and "sg_layout" in text
