"""ops.attention(cu_seqlens=...) on sm90: the split rows kernel over packed sequences
(``attention_rows_split_varlen_kernel``), each program reading its sequence's bounds from
cu_seqlens, its stores clamped to the sequence's rows (a row edge mask).

Offline: the PTX (wgmma key loops where the tiles allow, ptxas without spill) and the
kernel in the interpreter against float64 on ragged sequences, the rows between them
poisoned so that a write into a neighbour shows.  benchmarks/nv_ops_check.py (``varlen``)
runs ops.attention on CUDA tensors against torch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.ops import configs
from xetile_dsl.ops.attention import attention_rows_split_varlen_kernel
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

SIG = {"q": "f16[:,:,:]", "k": "f16[:,:,:]", "v": "f16[:,:,:]", "o": "f16[:,:,:]", "lse": "f32[:,:]",
       "cu_seqlens": "i32[:]", "H": "i32", "G": "i32", "qk_scale": "f32", "with_lse": "i32"}


def _reference(q, k, v, cu, causal):
    """float64 attention per sequence of packed [total, H, D] arrays; (o, lse [H, total])."""
    total, H, D = q.shape
    G = H // k.shape[1]
    o, lse = np.zeros((total, H, D)), np.zeros((H, total))
    for s0, s1 in zip(cu[:-1], cu[1:]):
        for h in range(H):
            qs, ks, vs = (x[s0:s1, hh].astype(np.float64) for x, hh in ((q, h), (k, h // G), (v, h // G)))
            s = qs @ ks.T / math.sqrt(D)
            if causal:
                s = np.where(np.tril(np.ones_like(s, bool)), s, -np.inf)
            mx = s.max(1, keepdims=True)
            p = np.exp(s - mx)
            o[s0:s1, h] = p @ vs / p.sum(1, keepdims=True)
            lse[h, s0:s1] = (mx + np.log(p.sum(1, keepdims=True)))[:, 0]
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_split_kernel_in_the_interpreter(causal):
    """Three sequences of 5, 40 and 19 tokens (none a multiple of the 16 x 16 tiles; one
    shorter than a block), GQA 4 / 2 heads, D = 32: o and lse within f16 rounding of
    float64 (inputs and P rounded to f16, f32 accumulation: 4 units of 2^-11 relative),
    and the output rows outside every sequence (a padding row at the end) left as they were."""
    rng = np.random.default_rng(1 + causal)
    cu = np.array([0, 5, 45, 64], np.int32)
    total, H, HK, D = 65, 4, 2, 32     # token 64 belongs to no sequence
    q = rng.standard_normal((total, H, D)).astype(np.float16)
    k, v = (rng.standard_normal((total, HK, D)).astype(np.float16) for _ in range(2))
    o = np.full((total, H, D), 7.0, np.float16)
    lse = np.full((total, H), 7.0, np.float32)    # [total, H] in this kernel (ops.attention returns lse.T)
    qk_scale = 1 / math.sqrt(D) * math.log2(math.e)
    BM = BN = 16
    attention_rows_split_varlen_kernel.on("interpret")[(-(-40 // BM), 3 * H)](
        *(x.transpose(1, 0, 2) for x in (q, k, v, o)), lse, cu, H, H // HK, qk_scale, 1, CAUSAL=causal,
        OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=True, SCALED=False)
    ref_o, ref_lse = _reference(q[:64], k[:64], v[:64], cu, causal)
    err = np.linalg.norm(o[:64].astype(np.float64) - ref_o) / np.linalg.norm(ref_o)
    assert err <= 4 * 2.0 ** -11, err
    assert np.abs(lse[:64].T - ref_lse).max() <= 4 * 2.0 ** -11 * np.abs(ref_lse).max()
    assert (o[64] == 7.0).all() and (lse[64] == 7.0).all()


@pytest.mark.parametrize("D,causal", [(64, True), (128, False)])
def test_varlen_builds_for_sm90_with_wgmma(D, causal, tmp_path):
    """At sm90's attention tiles the varlen kernel's key loops are the wgmma loops of the
    fixed-length split kernel (the per-sequence start only moves the tiles' origins):
    wgmma.mma_async and no mma.sync; ptxas sm_90a without spill."""
    BM, BN = configs.attention_tiles("sm90", D)
    sig = dict(SIG, **{n: f"f16[:,:,:]" for n in ("q", "k", "v", "o")})
    k = xd.compile(attention_rows_split_varlen_kernel, sig, {"CAUSAL": causal, "OUT": xt.float16, "D": D, "BM": BM,
                                                             "BN": BN, "LSE": True, "SCALED": False},
                   target="sm90", num_warps=BM // 16)
    assert "wgmma.mma_async" in k.ptx and "mma.sync" not in k.ptx
    report = ptxas_report(k.ptx, k.ptx_arch or SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
