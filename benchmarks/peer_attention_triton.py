"""Triton-XPU's flash-attention forward -> SPIR-V, on a machine without an Intel GPU.

Runs in a Triton-XPU venv, not in the project venv: benchmarks/peer_attention_isa.py
starts it as a subprocess, once per configuration (what the peers share, the venv, the
device properties and the outputs: peer_triton.py).

    python peer_attention_triton.py OUTDIR CONFIG

writes OUTDIR/CONFIG/k.spv, k.ttgir and meta.json (kernel name, IGC build options,
the DPAS layout's warpsPerCTA).  The kernel is written the way Triton-XPU users write
it: block pointers for Q, K^T (order=(0, 1) over the row-major K), V and O, the online
softmax in base 2, f16 operands, f32 statistics, BLOCK_M 128 x BLOCK_N 64 and the
warps/GRF mode of Intel's Triton attention benchmark (8 warps at D = 64, 16 at
D = 128, grf_mode "large", one_matrix_per_load_for_bt).
"""
import re
import sys

import peer_triton

peer_triton.prepare("cache-attention")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _key_blocks(acc, m_i, l_i, q, kt_ptr, v_ptr, qk_scale, first_key, last_key, q_first,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr):
    """Keys [first_key, last_key) in blocks of BLOCK_N, online softmax in base 2.  On the
    causal diagonal (DIAGONAL) a key after its query scores -inf."""
    kt_ptr = tl.advance(kt_ptr, (0, first_key))
    v_ptr = tl.advance(v_ptr, (first_key, 0))
    rows = q_first + tl.arange(0, BLOCK_M)
    for key0 in range(first_key, last_key, BLOCK_N):
        kt = tl.load(kt_ptr)
        s = tl.dot(q, kt)                                   # [BLOCK_M, BLOCK_N] f32
        if DIAGONAL:
            later = (key0 + tl.arange(0, BLOCK_N))[None, :] > rows[:, None]
            s = tl.where(later, float("-inf"), s * qk_scale)
            m_new = tl.maximum(m_i, tl.max(s, 1))
            x = s - m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            x = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(x)
        alpha = tl.math.exp2(m_i - m_new)                   # rescale of what came before
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(tl.float16), tl.load(v_ptr))
        m_i = m_new
        kt_ptr = tl.advance(kt_ptr, (0, BLOCK_N))
        v_ptr = tl.advance(v_ptr, (BLOCK_N, 0))
    return acc, m_i, l_i


@triton.jit
def flash_fwd(Q, K, V, Out, sm_scale, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              CAUSAL: tl.constexpr):
    """Out = softmax(Q K^T * sm_scale) V for the [N_CTX, HEAD_DIM] head program_id(1) of
    contiguous [Z * H, N_CTX, HEAD_DIM] f16 arrays, queries program_id(0) * BLOCK_M + [0,
    BLOCK_M).  N_CTX is a multiple of BLOCK_M (no boundary checks)."""
    q_first = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64) * N_CTX * HEAD_DIM
    q_ptr = tl.make_block_ptr(Q + head, (N_CTX, HEAD_DIM), (HEAD_DIM, 1), (q_first, 0),
                              (BLOCK_M, HEAD_DIM), (1, 0))
    # K^T over the row-major K: column-major [HEAD_DIM, N_CTX]
    kt_ptr = tl.make_block_ptr(K + head, (HEAD_DIM, N_CTX), (1, HEAD_DIM), (0, 0),
                               (HEAD_DIM, BLOCK_N), (0, 1))
    v_ptr = tl.make_block_ptr(V + head, (N_CTX, HEAD_DIM), (HEAD_DIM, 1), (0, 0),
                              (BLOCK_N, HEAD_DIM), (1, 0))
    o_ptr = tl.make_block_ptr(Out + head, (N_CTX, HEAD_DIM), (HEAD_DIM, 1), (q_first, 0),
                              (BLOCK_M, HEAD_DIM), (1, 0))
    qk_scale = sm_scale * 1.4426950408889634                # log2(e): exp -> exp2
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    q = tl.load(q_ptr)
    if CAUSAL:
        # blocks wholly before the first query, then the diagonal blocks, masked
        acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, kt_ptr, v_ptr, qk_scale, 0, q_first, q_first,
                                    BLOCK_M, BLOCK_N, False)
        acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, kt_ptr, v_ptr, qk_scale, q_first, q_first + BLOCK_M,
                                    q_first, BLOCK_M, BLOCK_N, True)
    else:
        acc, m_i, l_i = _key_blocks(acc, m_i, l_i, q, kt_ptr, v_ptr, qk_scale, 0, N_CTX, q_first,
                                    BLOCK_M, BLOCK_N, False)
    tl.store(o_ptr, (acc / l_i[:, None]).to(tl.float16))


#: name -> (head dim, causal, num_warps); Intel's benchmark: 8 warps at D = 64, 16 at 128
CONFIGS = {f"d{d}-{'causal' if causal else 'full'}": (d, causal, 8 if d == 64 else 16)
           for d in (64, 128) for causal in (False, True)}
BLOCK_M, BLOCK_N, NUM_STAGES, GRF_MODE = 128, 64, 3, "large"


def compile_config(name):
    """The compiled kernel of configuration ``name``."""
    d, causal, warps = CONFIGS[name]
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32", "N_CTX": "i32",
           "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "CAUSAL": "constexpr"}
    consts = {"HEAD_DIM": d, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "CAUSAL": causal}
    options = {"num_warps": warps, "num_stages": NUM_STAGES, "threads_per_warp": 16, "grf_mode": GRF_MODE,
               "one_matrix_per_load_for_bt": True}
    return peer_triton.compile_xpu(flash_fwd, sig, consts, options, ("Q", "K", "V", "Out", "N_CTX"))


def main(out_dir, name):
    kernel = compile_config(name)
    layout = re.search(r"#triton_intel_gpu\.dpas<\{[^}]*warpsPerCTA = \[(\d+), (\d+)\]", kernel.asm["ttgir"])
    d, causal, warps = CONFIGS[name]
    peer_triton.write_kernel(out_dir, name, kernel, {
        "head_dim": d, "causal": causal, "num_warps": warps, "num_stages": NUM_STAGES, "block_m": BLOCK_M,
        "block_n": BLOCK_N, "warps_per_cta": [int(layout.group(1)), int(layout.group(2))] if layout else None})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
