"""Block atomics and transposed stores on tiles moved in a loop, compiled by Intel's
offline compiler: one atomic / scattered store message per row of each 16 x sg block and
step (IGC unrolls the 3-step loop on pvc, keeps it on dg2), nothing spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from xetile_dsl.tools import ocloc

F32 = "f32[:,:]"


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_moved_block_atomics(target, ocloc_path):
    from tests.e2e.test_moved_row_access import atomic_down_rows

    i32 = "i32[:,:]"
    kernel = xd.compile(atomic_down_rows, {"x": i32, "out": i32, "old": i32},
                        {"STEPS": 3, "BM": 16, "BN": 32, "KIND": "addi"}, target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "atomic_down_rows", expect_dpas=False) == []
    per_step = 16 * (32 // (16 if target == "pvc" else 8))  # each row of the 32 / sg blocks
    assert len(re.findall(r"\batomic_iadd\b", kernel.asm["isa"])) in (per_step, 3 * per_step)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_moved_transposed_store(target, ocloc_path):
    from tests.e2e.test_moved_row_access import store_transposed_down

    kernel = xd.compile(store_transposed_down, {"x": F32, "y": F32}, {"STEPS": 3, "BM": 16, "BN": 32},
                        target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "store_transposed_down", expect_dpas=False) == []
    per_step = 16 * (32 // (16 if target == "pvc" else 8))  # each logical row of the 32 / sg blocks
    assert len(re.findall(r"\bstore\.ugm\b", kernel.asm["isa"])) in (per_step, 3 * per_step)
