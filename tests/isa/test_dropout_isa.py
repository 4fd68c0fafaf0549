"""Seeded dropout (examples/tutorial_06_dropout.py) compiled for PVC by Intel's offline
compiler: the random numbers are register arithmetic, so the only memory messages are
the two tiles' 2D block read and write (no per-lane gather or scatter, no spills)."""
from __future__ import annotations

import pathlib
import runpy

import xetile_dsl as xd
from xetile_dsl.tools import isa as listing
from xetile_dsl.tools import ocloc

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tutorial_06_dropout.py"
SIG = {"x": "f32[:,:]", "out": "f32[:,:]", "n_cols": "i32", "p": "f32", "seed": "i32"}


def test_dropout_has_no_gathers_on_pvc(ocloc_path):
    kernel_fn = runpy.run_path(str(EXAMPLE))["dropout_kernel"]
    kernel = xd.compile(kernel_fn, SIG, {"BM": 8, "BN": 32}, target="pvc")
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, "dropout_kernel", expect_dpas=False, expect_block2d=True, expect_simd=16) == []
    kinds = [ins.kind for ins in listing.instructions(isa)]
    assert kinds.count("gather") == 0 and kinds.count("scatter") == 0, sorted(set(kinds))
    assert ocloc.count(isa, ocloc.LOAD_BLOCK2D) >= 1 and ocloc.count(isa, ocloc.STORE_BLOCK2D) >= 1


def test_dropout_compiles_for_arc(ocloc_path):
    """ARC (no 2D block messages): the draws add no memory messages of their own either;
    what remains are the tiles' row messages (gathers only for edge rows)."""
    kernel_fn = runpy.run_path(str(EXAMPLE))["dropout_kernel"]
    kernel = xd.compile(kernel_fn, SIG, {"BM": 8, "BN": 32}, target="arc")
    assert ocloc.check_isa(kernel.asm["zebin"], "dropout_kernel", expect_dpas=False, expect_simd=8) == []
