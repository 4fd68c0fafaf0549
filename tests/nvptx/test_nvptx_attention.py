"""ops.attention's kernel (the untransposed "rows" form, the same @jit source as the Intel
targets) for sm90 without a GPU: row statistics in ``mma_c_col``, P used as A in its C
registers, K^T staged as K's rows and read by plain ``ldmatrix``, 4 warps of 16 query
rows; ptxas: no spill, no local memory; the m16n8k16 count a key step at the floor.  And
the row ops' 16-byte loads.  Results on a GPU: benchmarks/vs_cuda_attention.py."""
from __future__ import annotations

import importlib
import math
import re

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx.layouts import Layout, cols_run
from xetile_dsl.codegen.nvptx.warp_ops import c_as_a
from xetile_dsl.codegen.nvptx.lane_values import Vec
from xetile_dsl.ops import configs
from xetile_dsl.ops.rows import softmax_kernel
from xetile_dsl.targets.nvidia import SM80, SM90

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
    """The mma.sync tiles (sm80, no wgmma): BM / 16 warps, K^T through ldmatrix (non-trans)
    and V through ldmatrix.trans from a cp.async ring; per warp and key step (BN / 8)(D / 16)
    m16n8k16 for S = Q K^T and (D / 8)(BN / 16) for O += P V, nothing else; ptxas: no spill."""
    BM, BN = configs.attention_tiles("sm80", D)
    k = xd.compile(attention.attention_rows_nd_kernel, SIG,
                   dict(CAUSAL=causal, OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False), target="sm80")
    assert k.threads == 32 * BM // 16 and f'nv.warps = "{BM // 16}x1"' in k.asm["nv"]
    assert 'nv.layout = "mma_c_col"' in k.asm["nv"]
    assert 'nv.smem = "ldmatrix"' in k.asm["nv"] and 'nv.smem = "ldmatrix.trans"' in k.asm["nv"]
    ptx = k.ptx
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16", ptx)) == (BN // 8) * (D // 16) + (D // 8) * (BN // 16)
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared", ptx)) == (D // 16) * (BN // 16)
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared", ptx)) == (BN // 16) * (D // 16)
    assert "ex2.approx.ftz.f32" in ptx and "shfl.sync.bfly.b32" in ptx
    report = ptxas_report(ptx, SM80.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


@pytest.mark.parametrize("D,causal,dtype", [(64, True, "f16"), (128, False, "bf16")])
def test_attention_wgmma_ptx(D, causal, dtype, tmp_path):
    """sm90's tiles (BM / 64 warpgroups): ops.attention's kernel options, the
    unmasked key blocks and the masked ones in two loops, each a wgmma key loop
    (codegen/nvptx/wgmma_attention.py): a trip issues D / 16 m64n{BN}k16 for S = Q K^T (Q
    and K through descriptors) and BN / 16 m64n{D}k16 for O += P V (P from registers),
    the floor; no mma.sync, no ldmatrix (the swizzled ring is read by wgmma); one
    wait a trip, O's product left in flight across the back edge; ptxas: no spill, no
    warning (a serialized wgmma would warn)."""
    BM, BN = configs.attention_tiles("sm90", D)
    assert BM % 64 == 0 and configs.attention_split("sm90")
    kernel, options = attention._kernel_and_options("sm90", 0.125)
    sig = {name: t.replace("f16", dtype) for name, t in SIG.items()}
    out = xt.float16 if dtype == "f16" else xt.bfloat16
    k = xd.compile(kernel, sig, dict(CAUSAL=causal, OUT=out, D=D, BM=BM, BN=BN, **options), target="sm90")
    nv, ptx = k.asm["nv"], k.ptx
    assert k.threads == 2 * BM and f'nv.warps = "{BM // 16}x1"' in nv and ".target sm_90a" in ptx
    shapes = {f"m64n{BN}k16", f"m64n{D}k16"}
    assert {shape: nv.count(f'nv.wgmma = "{shape}"') for shape in shapes} == \
        {shape: 2 * (f"m64n{BN}k16" == shape) + 2 * (f"m64n{D}k16" == shape) for shape in shapes}
    assert nv.count('nv.smem = "swizzle128.k"') == 2 and nv.count('nv.smem = "swizzle128.mn"') == 2
    t = dtype
    s_steps = re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{BN}k16\.f32\.{t}\.{t} {{[^}}]*}}, %rd\d+, %rd", ptx)
    o_steps = re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{D}k16\.f32\.{t}\.{t} {{[^}}]*}}, {{%r\d+, %r\d+, "
                         rf"%r\d+, %r\d+}}, %rd", ptx)
    assert len(s_steps) == 2 * D // 16 and len(o_steps) == 2 * BN // 16
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert ptx.count("wgmma.wait_group.sync.aligned 0;") == 2 + 2   # a trip's, one after each loop
    assert k.smem_bytes <= SM90.smem_per_block
    report = ptxas_report(ptx, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "warning" not in report.lower(), report


@pytest.mark.parametrize("N,causal,BM,BN", [(45, True, 32, 16), (33, False, 16, 32)])
def test_split_loops_interpreted(N, causal, BM, BN):
    """The split kernel (the unmasked key blocks in a loop of their own, the scale in the exp2's fma)
    against float64 in the interpreter, N not a multiple of the tiles, GQA (2 query heads
    a kv head).  Bound: the output's rounding plus P rounded to f16 before P V, 2^-11
    each relative to max |v| <= 5, and the f32 sums: 4 * 2^-11 * 5."""
    rng = np.random.default_rng(N)
    D = 32
    q = rng.standard_normal((1, 4, N, D)).astype(np.float16)
    k, v = (rng.standard_normal((1, 2, N, D)).astype(np.float16) for _ in range(2))
    o = np.zeros_like(q)
    attention.attention_rows_split_nd_kernel.on("interpret")[(-(-N // BM), 4)](
        q, k, v, o, np.zeros((1, 1, 1), np.float32), N, 4, 2, math.log2(math.e) / math.sqrt(D), 0, CAUSAL=causal,
        OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False, SCALED=False)
    kk, vv = (np.repeat(x.astype(np.float64), 2, axis=1) for x in (k, v))
    s = q.astype(np.float64) @ kk.transpose(0, 1, 3, 2) / math.sqrt(D)
    if causal:
        s = np.where(np.triu(np.ones((N, N), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ vv
    assert np.abs(o - want).max() <= 4 * 2.0 ** -11 * 5


def test_rows_take_16_byte_accesses():
    """A cols layout of 256 columns holds runs of 8 a lane: f16 softmax reads and writes
    each run with one 16-byte access (4 rows x 1 run, in each of its two passes; read on
    the in-bounds path and, where the run lies in the array, on the edge path)."""
    assert cols_run(256) == 8 and cols_run(96) == 1
    k = xd.compile(softmax_kernel, {"x": "f16[:,:]", "y": "f16[:,:]", "N": "i32"},
                   {"OUT": xt.float16, "BM": 4, "BC": 256}, target="sm90")
    assert len(re.findall(r"ld\.global\.v4\.b32", k.ptx)) == 2 * 2 * 4
    assert len(re.findall(r"st\.global\.v4\.b32", k.ptx)) == 4
