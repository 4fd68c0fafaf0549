"""ops.attention's kernel (the untransposed "rows" form, the same @jit source as the Intel
targets) for sm90 without a GPU: row statistics in ``mma_c_col``, P used as A in its C
registers, K^T staged as K's rows and read by plain ``ldmatrix``, 4 warps of 16 query
rows; ptxas: no spill, no local memory; the m16n8k16 count a key step at the floor.  And
the row ops' 16-byte loads.  Results on a GPU: benchmarks/vs_cuda_attention.py."""
from __future__ import annotations

import importlib
import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx.layouts import Layout, cols_run
from xetile_dsl.codegen.nvptx.warp_ops import c_as_a
from xetile_dsl.codegen.nvptx.lane_values import Vec
from xetile_dsl.ops import configs
from xetile_dsl.ops.rows import softmax_kernel
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

attention = importlib.import_module("xetile_dsl.ops.attention")

SIG = {"q": "f16[:,:,:,:]", "k": "f16[:,:,:,:]", "v": "f16[:,:,:,:]", "o": "f16[:,:,:,:]", "lse": "f32[:,:,:]",
       "N": "i32", "H": "i32", "G": "i32", "qk_scale": "f32", "with_lse": "i32"}


def test_row_statistics_layout():
    """mma_c_col: lane l holds rows g and g + 8 of each m16 block (g = l >> 2), the rows
    its mma_c slots have, so a column broadcast reads its own registers."""
    col, c = Layout("mma_c_col", (32, 1)), Layout("mma_c", (32, 16))
    assert col.slots() == [(0, 0), (8, 0), (16, 0), (24, 0)]
    assert col.lane_base()[0] == c.lane_base()[0] and not col.owned_once()


def test_c_registers_are_the_a_fragment():
    """C of blocks (0, 2j), (0, 2j + 1) is A of block (0, j): the same (row, column) per slot."""
    c = Layout("mma_c", (16, 32))
    value = c_as_a(Vec(c, None, list(c.slots())))
    assert value.layout.kind == "mma_a" and value.slots == value.layout.slots()


@pytest.mark.parametrize("D,causal", [(64, True), (128, False)])
def test_attention_ptx(D, causal, tmp_path):
    """The sm90 tiles: BM / 16 warps, K^T through ldmatrix (non-trans) and V through
    ldmatrix.trans from a cp.async ring; per warp and key step (BN / 8)(D / 16) m16n8k16
    for S = Q K^T and (D / 8)(BN / 16) for O += P V, nothing else; ptxas: no spill."""
    BM, BN = configs.attention_tiles("sm90", D)
    k = xd.compile(attention.attention_rows_nd_kernel, SIG,
                   dict(CAUSAL=causal, OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False), target="sm90")
    assert k.threads == 32 * BM // 16 and f'nv.warps = "{BM // 16}x1"' in k.asm["nv"]
    assert 'nv.layout = "mma_c_col"' in k.asm["nv"]
    assert 'nv.smem = "ldmatrix"' in k.asm["nv"] and 'nv.smem = "ldmatrix.trans"' in k.asm["nv"]
    ptx = k.ptx
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16", ptx)) == (BN // 8) * (D // 16) + (D // 8) * (BN // 16)
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared", ptx)) == (D // 16) * (BN // 16)
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared", ptx)) == (BN // 16) * (D // 16)
    assert "ex2.approx.ftz.f32" in ptx and "shfl.sync.bfly.b32" in ptx
    report = ptxas_report(ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


def test_rows_take_16_byte_accesses():
    """A cols layout of 256 columns holds runs of 8 a lane: f16 softmax reads and writes
    each run with one 16-byte access (4 rows x 1 run, in each of its two passes)."""
    assert cols_run(256) == 8 and cols_run(96) == 1
    k = xd.compile(softmax_kernel, {"x": "f16[:,:]", "y": "f16[:,:]", "N": "i32"},
                   {"OUT": xt.float16, "BM": 4, "BC": 256}, target="sm90")
    assert len(re.findall(r"ld\.global\.v4\.b32", k.ptx)) == 2 * 4
    assert len(re.findall(r"st\.global\.v4\.b32", k.ptx)) == 4
