"""The math library compiled for every GPU target by Intel's offline compiler: each
OpenCL builtin resolves inside the kernel (no calls left), and nothing spills."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.math_library import math_kernel
from xetile_dsl.targets import get_target
from xetile_dsl.tools import ocloc

SIG = {"x": "f32[:,:]", "y": "f32[:,:]", "o": "f32[:,:]"}


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_math_library_compiles_without_calls(target, ocloc_path):
    lanes = get_target(target).subgroup_size
    kernel = xd.compile(math_kernel, SIG, {"C": lanes}, target=target)
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, "math_kernel", expect_dpas=False, expect_simd=lanes) == []
    assert ocloc.count(isa, ocloc.CALLA) == 0
