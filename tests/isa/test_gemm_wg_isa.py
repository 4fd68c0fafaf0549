"""The RFC Appendix 2.1 workgroup GEMM compiled for pvc by Intel's offline compiler:
DPAS and 2D-block loads in the hot loop, cooperative 2D-block prefetches, no spills.
Each subgroup's 32x64 f32 accumulator is 128 of the 128 default registers, so the
kernel is built in the 256-GRF mode (``-ze-opt-large-register-file``)."""
from __future__ import annotations

import xetile_dsl as xd
from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel
from xetile_dsl.tools import ocloc

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
NAME = "gemm_prefetch_kernel"


def test_appendix_2_1_gemm_isa_pvc(ocloc_path):
    kernel = xd.compile(gemm_prefetch_kernel, SIG, {"BM": 256, "BN": 256, "BK": 32, "PF": 3}, target="pvc")
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    assert kernel.abi.extra["build_options"] == "-ze-opt-large-register-file"
    assert kernel.asm["xegpu"].count("scf.for") == 1  # 8 + 3 KiB fit the budget: not split
    loop = ocloc.hot_loop(kernel.asm["isa"])
    # per subgroup and K step: (32/8) x (64/16) x (32/16) = 32 DPAS
    assert ocloc.count(loop, ocloc.DPAS) == 32
    sends = [ln for ln in loop.splitlines() if "load_block2d" in ln]
    assert any(".d16v." in ln for ln in sends)  # B with VNNI transform
    prefetches = [ln for ln in sends if ln.split()[2] == "null"]  # no destination register
    assert len(prefetches) == 4  # A 8x32 and B 8x32 slices, two 8x16 blocks each


def test_subgroup_gemm_stays_in_the_default_grf_mode(ocloc_path):
    from xetile_dsl.kernels.matmul import matmul_kernel

    kernel = xd.compile(matmul_kernel, SIG, {"BM": 32, "BN": 32, "BK": 32}, target="pvc")
    assert kernel.asm["zebin"].execution_env("matmul_kernel")["grf_count"] == 128
    assert kernel.abi.workgroup_size == 16
