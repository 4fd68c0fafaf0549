"""Every op of ``xetile_dsl.ops`` on sm90 without a GPU (scripts/nv_coverage.py's list):
each case builds its kernels' PTX; the kernels this slice brought up (1-D arrays, scf.if, array
elements, scattered tiles, sin/cos, transposes into replicated values) assemble with
ptxas for sm_90 without spill.  Results on a GPU: benchmarks/nv_ops_check.py."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.ops.llm import rope_gptj_kernel, rope_neox_kernel
from xetile_dsl.ops.losses import cross_entropy_forward_kernel
from xetile_dsl.ops.rows_backward import norm_backward_kernel
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

#: a case of each kind of scripts/nv_coverage.py's list: (name, expected outcome)
#: (attention_backward builds too, in about 30 s a kernel here: scripts/nv_coverage.py)
CASES = [("cross_entropy f32", "ok"), ("rope gptj f16", "ok"),
         ("matmul_backward f16", "ok"), ("matmul_wq f16 int4", "ok"),
         ("attention f16 varlen", "ok"), ("matmul f8e4m3 x f8e4m3", "ok")]


@pytest.fixture(scope="module")
def coverage(nv_coverage):
    return nv_coverage, dict(nv_coverage.op_cases())


@pytest.mark.parametrize("name,expected", CASES)
def test_every_op_builds(coverage, name, expected):
    """ok: the op's kernels compiled to PTX (no error of any kind)."""
    mod, cases = coverage
    status, detail = mod.run_case(name, cases[name])
    assert status == expected, detail


@pytest.mark.parametrize("src,dst", [(("cols", (1, 64)), ("mma_c_col", (64, 1))), (("rep", (1, 16)), ("mma_c_col", (16, 1))),
                                     (("mma_c", (16, 16)), ("rep", (16, 16))), (("cols", (1, 32)), ("mma_b_col", (32, 1)))])
def test_relayout_plan_takes_each_element_from_a_lane_holding_it(src, dst):
    """The transposing relayout: dst slot j of lane l comes from a (lane, slot) of the
    source whose position is the transposed one; a lane holding it uses its own register."""
    from xetile_dsl.codegen.nvptx.layouts import Layout
    from xetile_dsl.codegen.nvptx.warp_ops import lane_positions, relayout_plan
    s, d = Layout(*src), Layout(*dst)
    src_pos, dst_pos = lane_positions(s), lane_positions(d)
    for j, (lanes, slots) in enumerate(relayout_plan(s, d, swap=True)):
        for lane in range(32):
            assert src_pos[lanes[lane]][slots[lane]] == dst_pos[lane][j][::-1]
            if dst_pos[lane][j][::-1] in src_pos[lane]:
                assert lanes[lane] == lane


def test_row_and_column_kinds_hold_their_fragments_positions():
    """mma_b_row holds, in each lane, the columns that lane's mma_b slots have (so a row
    broadcast into B reads its own registers); mma_b_col the rows; mma_c_col_t is
    mma_c_col transposed, lane for lane."""
    from xetile_dsl.codegen.nvptx.layouts import Layout
    from xetile_dsl.codegen.nvptx.warp_ops import lane_positions
    b = lane_positions(Layout("mma_b", (32, 64)))
    row, col = lane_positions(Layout("mma_b_row", (1, 64))), lane_positions(Layout("mma_b_col", (32, 1)))
    ct, c = lane_positions(Layout("mma_c_col_t", (1, 64))), lane_positions(Layout("mma_c_col", (64, 1)))
    for lane in range(32):
        assert {cc for _, cc in row[lane]} == {cc for _, cc in b[lane]}
        assert {r for r, _ in col[lane]} == {r for r, _ in b[lane]}
        assert ct[lane] == [p[::-1] for p in c[lane]]


def _build(fn, sig, consts):
    return xd.compile(fn, sig, consts, target="sm90")


@pytest.mark.parametrize("which", ["cross_entropy", "norm_backward", "rope_neox", "rope_gptj"])
def test_new_kernels_assemble_without_spill(which, tmp_path):
    """1-D parameters (pointer and extent), [n, 1] <-> [1, n] transposes, scf.if around an
    element read, gathers and scatters, sin/cos: ptxas sm_90 reports no spill and no
    stack frame; the PTX holds what each needs (shfl.idx for the turned row statistics,
    sin.approx after the range reduction)."""
    if which == "cross_entropy":
        k = _build(cross_entropy_forward_kernel, {"x": "f16[:,:]", "t": "i64[:]", "loss": "f32[:]", "lse": "f32[:]",
                                                  "N": "i32", "ignore_index": "i32"}, {"BM": 4, "BC": 256})
        assert k.params[1] == ("t", "array")
    elif which == "norm_backward":
        sig = {"dy": "bf16[:,:]", "x": "bf16[:,:]", "w": "f32[:]", "mean": "f32[:]", "rstd": "f32[:]",
               "dx": "bf16[:,:]", "pw": "f32[:,:]", "pb": "f32[:,:]", "rows": "i32", "N": "i32"}
        k = _build(norm_backward_kernel, sig, {"RMS": False, "OUT": xt.bfloat16, "BM": 4, "BC": 256})
    elif which == "rope_neox":
        k = _build(rope_neox_kernel, {"q": "f16[:,:,:]", "k": "f16[:,:,:]", "pos": "i32[:]", "inv_freq": "f32[:]",
                                      "HQ": "i32", "HK": "i32"}, {"OUT": xt.float16, "BH": 8, "HALF": 32})
        assert "sin.approx.ftz.f32" in k.ptx and "cos.approx.ftz.f32" in k.ptx
    else:
        k = _build(rope_gptj_kernel, {"q": "f16[:,:]", "k": "f16[:,:]", "pos": "i32[:]", "inv_freq": "f32[:]",
                                      "HQ": "i32", "HK": "i32", "D": "i32"}, {"OUT": xt.float16, "BH": 8, "HALF": 32})
    report = ptxas_report(k.ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


def test_transposed_operands_copy_row_major():
    """ops.matmul's trans_a / trans_b on an NVIDIA target: the operand's row-major copy."""
    from xetile_dsl.ops.matmul import row_major_operands
    x = np.arange(6, dtype=np.float16).reshape(3, 2)
    a, b, ta, tb = row_major_operands("sm90", x, x, False, True)
    assert (ta, tb) == (False, False) and a is x and (b == x.T).all() and b.flags.c_contiguous


@xd.jit
def _element_kernel(x, y, n):
    i = xt.program_id(0)
    v = x[i]            # scf.if (i < extent) around one memref.load
    if v > 0.0:
        y[i] = v * 2.0  # one memref.store, by lane 0
    else:
        y[i] = x[n - 1 - i]


def test_array_elements_and_scf_if_build(tmp_path):
    """Element reads and writes of 1-D arrays and an scf.if on their value: the loads and
    the stores of both branches (LLVM merges them into one, after a select), no spill."""
    k = _build(_element_kernel, {"x": "f32[:]", "y": "f32[:]", "n": "i32"}, {})
    assert 'scf.if' in k.asm["nv"] and "memref.store" in k.asm["nv"]
    assert re.search(r"st\.global\.(b32|f32)", k.ptx) and "ld.global" in k.ptx
    report = ptxas_report(k.ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
