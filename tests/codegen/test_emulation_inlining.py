"""The CPU emulation of Intel's builtins is called, not inlined: the OpenCL CPU runtime
then builds each body once (as a subgroup vector variant) instead of once per call site
-- inlined, a 32x64x32 ARC GEMM's 64 DPAS and 64 gather bodies made a ~70k-instruction
program and a 72 s build (3 s called). GPU modules keep their wrappers ``alwaysinline``
(IGC's code is unchanged); results on the CPU are checked exactly by tests/e2e."""
from __future__ import annotations

import re
import warnings

import pytest

import xetile_dsl as xd
from xetile_dsl.kernels.matmul import matmul_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _defined(target: str) -> dict[str, str]:
    """name -> attributes of every function the module defines besides the kernel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        llvm = xd.compile(matmul_kernel, SIG, {"BM": 32, "BN": 64, "BK": 32}, target=target).asm["llvm"]
    found = re.findall(r'^define internal spir_func .*? @"([^"]+)"\(.*\)(.*)$', llvm, re.M)
    return {name: attrs.strip() for name, attrs in found}


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_cpu_emulation_bodies_are_called_once_each(target):
    defined = _defined(target)
    assert any("matrix_mad" in name for name in defined) and len(defined) >= 4
    for name, attrs in defined.items():
        assert "noinline" in attrs.split() and "convergent" in attrs.split(), (name, attrs)
        assert "alwaysinline" not in attrs, (name, attrs)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_gpu_wrappers_stay_inline(target):
    defined = _defined(target)
    assert defined and all(attrs.split() == ["alwaysinline"] for attrs in defined.values()), defined
    assert not any("matrix_mad" in name for name in defined)   # DPAS is IGC's, declared


@pytest.mark.parametrize("target, lanes", [("cpu-pvc", 16), ("cpu-arc", 8)])
def test_cpu_dpas_body_fetches_a_once_per_source_lane(target, lanes):
    """The emulated f16 DPAS (8 rows, K = 16) takes each lane's whole A operand in one
    vector broadcast and accumulates the 8 rows as one vector fma per K column: 16
    scalar shuffles per row and 128 scalar fmas before, about 40 % more CPU build time
    for a 32x32 GEMM (builtins_dpas.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        llvm = xd.compile(matmul_kernel, SIG, {"BM": 32, "BN": 64, "BK": 32}, target=target).asm["llvm"]
    body = re.search(r'^define internal spir_func [^\n]*matrix_mad_k16[^\n]*\n?\{\n(.*?)\n\}', llvm, re.M | re.S).group(1)
    k_per_lane = 16 // lanes   # f16 elements of one row each lane holds
    assert len(re.findall(r"call [^\n]*@\"?_Z19sub_group_broadcast", body)) == lanes
    assert "intel_sub_group_shuffle" not in body
    assert len(re.findall(r"call <8 x float> @\"?llvm\.fma\.v8f32", body)) == lanes * k_per_lane == 16
