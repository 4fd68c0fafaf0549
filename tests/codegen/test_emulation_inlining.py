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
