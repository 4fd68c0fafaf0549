"""Every suite kernel the 16-lane flavour lowers, compiled for the Xe2 GPUs (bmg, then lnl
from the same SPIR-V: the two targets' kernels are identical) by Intel's offline
compiler: 16 lanes, no spill, no unresolved calls, and DPAS / 2D block messages in the
machine code wherever the kernel's LLVM IR calls for them (shapes below the 2D block
minimums are per-lane messages by the lowering's rules, on pvc too)."""
from __future__ import annotations

import re

import pytest

from suite_kernels import cases
from xetile_dsl.compiler import compile_kernel
from xetile_dsl.targets import BMG, LNL
from xetile_dsl.tools import ocloc

CASES = {c.name: c for c in cases() if "pvc" in c.compiled}


def _expected(llvm: str) -> tuple[bool, bool]:
    """(DPAS expected, 2D block messages expected) from the builtins the LLVM IR calls."""
    return "_matrix_mad_" in llvm, bool(re.search(r"intel_sub_group_2d_block_(read|write|prefetch)", llvm))


@pytest.mark.parametrize("name", sorted(CASES))
def test_suite_kernel_isa_on_xe2(name, ocloc_path):
    case = CASES[name]
    _, specs, constants = case.kernel.bind(tuple(case.args), dict(case.constexprs))
    kernel = compile_kernel(case.kernel.fn, specs, constants, "bmg", isa=True)
    dpas, block2d = _expected(kernel.asm["llvm"])
    entry = kernel.abi.kernel_name
    lnl = ocloc.compile_spirv(kernel.spirv, LNL.ocloc_device, kernel.abi.extra["build_options"])
    for target, zebin in ((BMG, kernel.asm["zebin"]), (LNL, lnl)):
        problems = ocloc.check_isa(zebin, entry, expect_dpas=dpas, expect_block2d=block2d,
                                   expect_simd=target.subgroup_size)
        assert problems == [], (target.name, problems)
