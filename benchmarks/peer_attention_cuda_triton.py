"""The peer of ``ops.attention`` on an NVIDIA GPU: a flash attention forward written in
Triton after the algorithm of Triton's fused-attention tutorial (FlashAttention-2: one
program per block of BM queries of one head, the keys in blocks of BN, the online
softmax in base 2 with the running maximum and sum rescaling the accumulator, causal
programs stopping at their diagonal and masking only the diagonal blocks).

    python benchmarks/peer_attention_cuda_triton.py      # checks against torch SDPA, prints TFLOP/s

``benchmarks/vs_cuda_attention.py`` imports :func:`attention` and :func:`best_config` to
time it beside ``ops.attention`` and torch's scaled_dot_product_attention.  Needs triton
and a CUDA GPU (the device's Triton compiles tl.dot to wgmma on Hopper)."""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d, start, stop, N,
                BN: tl.constexpr, MASKED: tl.constexpr, qk_scale):
    """The keys [start, stop) in blocks of BN: scores, online softmax, P V."""
    offs_n = tl.arange(0, BN)
    for lo in tl.range(start, stop, BN):
        keys = lo + offs_n
        kt = tl.load(k_base + keys[None, :] * stride_kn + offs_d[:, None], mask=keys[None, :] < N, other=0.0)
        s = tl.dot(q, kt) * qk_scale
        if MASKED:   # the diagonal block (and keys past N)
            keep = (offs_m[:, None] >= keys[None, :]) & (keys[None, :] < N)
            s = tl.where(keep, s, float("-inf"))
        else:
            s = tl.where(keys[None, :] < N, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + keys[:, None] * stride_vn + offs_d[None, :], mask=keys[:, None] < N, other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attention_fwd(Q, K, V, O, qk_scale, N, H,
                   sqz, sqh, sqn, skz, skh, skn, svz, svh, svn, soz, soh, son,
                   D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = zh // H
    h = zh % H
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + z * sqz + h * sqh + offs_m[:, None] * sqn + offs_d[None, :], mask=offs_m[:, None] < N,
                other=0.0)
    k_base = K + z * skz + h * skh
    v_base = V + z * svz + h * svh
    m_i = tl.full([BM], -float("inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    if CAUSAL:
        # blocks wholly before the diagonal need no mask; then the diagonal blocks
        acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, k_base, v_base, skn, svn, offs_m, offs_d, 0, pid_m * BM, N,
                                    BN, False, qk_scale)
        acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, k_base, v_base, skn, svn, offs_m, offs_d, pid_m * BM,
                                    tl.minimum((pid_m + 1) * BM, N), N, BN, True, qk_scale)
    else:
        acc, l_i, m_i = _key_blocks(acc, l_i, m_i, q, k_base, v_base, skn, svn, offs_m, offs_d, 0, N, N,
                                    BN, False, qk_scale)
    out = acc / l_i[:, None]
    tl.store(O + z * soz + h * soh + offs_m[:, None] * son + offs_d[None, :], out.to(O.dtype.element_ty),
             mask=offs_m[:, None] < N)


#: (BM, BN, num_warps, num_stages) tried by :func:`best_config`; BN divides BM, so a
#: causal program's diagonal is whole blocks
CONFIGS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 4))


def attention(q, k, v, causal: bool, config=CONFIGS[0], scale: float | None = None):
    """softmax(q k^T * scale [+ causal]) v for [Z, H, N, D] CUDA tensors (unit stride in D)."""
    Z, H, N, D = q.shape
    BM, BN, warps, stages = config
    o = torch.empty_like(q)
    qk_scale = (1.0 / math.sqrt(D) if scale is None else scale) * 1.4426950408889634
    grid = (triton.cdiv(N, BM), Z * H)
    _attention_fwd[grid](q, k, v, o, qk_scale, N, H, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
                         *o.stride()[:3], D=D, BM=BM, BN=BN, CAUSAL=causal, num_warps=warps, num_stages=stages)
    return o


def best_config(q, k, v, causal: bool, timer, configs=CONFIGS) -> tuple[tuple, float]:
    """(config, ms) of the fastest of ``configs`` (:data:`CONFIGS`) by ``timer(fn) -> ms``;
    configs that do not compile (shared memory) are skipped."""
    best = None
    for config in configs:
        try:
            ms = timer(lambda: attention(q, k, v, causal, config))
        except Exception:  # noqa: BLE001 - out of shared memory / resources for this config
            continue
        if best is None or ms < best[1]:
            best = (config, ms)
    return best


if __name__ == "__main__":
    torch.manual_seed(0)
    for D, causal in ((64, False), (128, True)):
        q, k, v = (torch.randn(2, 4, 1000, D, device="cuda", dtype=torch.float16) for _ in range(3))
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out = attention(q, k, v, causal)
        print(f"D {D} causal {causal}: max |triton - sdpa| = {(out - ref).abs().max().item():.3e}")
