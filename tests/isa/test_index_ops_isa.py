"""arange, argmax, ``while`` over tiles and integer reductions compiled by Intel's offline
compiler: no spills, no calls; arange lane ids are computed (no memory access), a
non-affine lane table is one constant load per lane; the ``while`` keeps the carried
tile in registers."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from xetile_dsl.codegen.emit import constant_vectors as codegen_constants
from kernels.index_ops import (argmax_rows_kernel, argmax_rows_wg_kernel, column_ids_kernel,
                                          column_ids_wg_kernel, halving_sums_kernel, halving_wg_kernel,
                                          int_reductions_kernel)
from xetile_dsl.tools import ocloc

F = "f32[:,:]"
SIMD = {"pvc": 16, "arc": 8}
PER_LANE_LOAD = r"load\.ugm\.d32\.a64"  # a SIMD gather (one address per lane)
KERNELS = {
    "column_ids": (column_ids_kernel, {"x": F, "y": F}, {"BM": 16, "BN": 32}),
    "column_ids_wg": (column_ids_wg_kernel, {"x": F, "y": F}, {}),
    "argmax": (argmax_rows_kernel, {"x": F, "best": "i32[:,:]", "worst": "i32[:,:]"}, {"BM": 8, "BN": 32}),
    "argmax_wg": (argmax_rows_wg_kernel, {"x": F, "best": "i32[:,:]"}, {}),
    "while": (halving_sums_kernel, {"x": F, "y": F, "sums": F, "steps": "i32"}, {"BM": 16, "BN": 32}),
    "while_wg": (halving_wg_kernel, {"x": F, "y": F, "steps": "i32"}, {}),
    "reduce_i8": (int_reductions_kernel, {n: "i8[:,:]" for n in ("x", "rsum", "rmax", "cmin", "cprod")},
                  {"BM": 8, "BN": 64}),
    "reduce_i64": (int_reductions_kernel, {n: "i64[:,:]" for n in ("x", "rsum", "rmax", "cmin", "cprod")},
                   {"BM": 8, "BN": 64}),
}


def _compile(name, target):
    fn, sig, consts = KERNELS[name]
    return xd.compile(fn, sig, consts, target=target)


@pytest.mark.parametrize("target", ["pvc", "arc"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_compiles_without_spills_or_calls(name, target, ocloc_path):
    kernel = _compile(name, target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, kernel.abi.kernel_name, expect_dpas=False, expect_simd=SIMD[target]) == []
    assert zebin.execution_env(kernel.abi.kernel_name)["grf_count"] == (128 if target == "pvc" else 256)


def test_arange_lane_ids_are_computed_not_loaded(ocloc_path):
    """pvc: x is read and y written with 2D block messages; the 0..31 column ids cost no
    memory access at all."""
    isa = _compile("column_ids", "pvc").asm["isa"]
    assert ocloc.count(isa, r"load_block2d") == 4 and ocloc.count(isa, r"store_block2d") == 4
    assert ocloc.count(isa, PER_LANE_LOAD) == 0


def test_a_non_affine_lane_table_is_one_constant_load_per_block(ocloc_path, monkeypatch):
    monkeypatch.setattr(codegen_constants, "_affine", lambda *args: None)
    isa = _compile("column_ids", "pvc").asm["isa"]
    assert ocloc.count(isa, PER_LANE_LOAD) == 2  # two 1 x 16 blocks of the [1, 32] table


def test_while_keeps_the_carried_tile_in_registers(ocloc_path):
    """16 x 32 f32 per subgroup = 32 SIMD16 registers: the loop body halves them with 32
    multiplies and touches no memory."""
    loop = ocloc.hot_loop(_compile("while", "pvc").asm["isa"])
    assert ocloc.count(loop, r"\bmul \(16\|M0\)") == 32
    assert ocloc.count(loop, r"\bsend") == 0
