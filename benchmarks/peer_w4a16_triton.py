"""Triton-XPU's W4A16 GEMM (int4 weights, f16 activations) -> SPIR-V, without a GPU.

Runs in a Triton-XPU venv, not in the project venv: benchmarks/wq_isa.py starts it as a
subprocess, once per configuration (what the peers share: peer_triton.py).

    python peer_w4a16_triton.py OUTDIR CONFIG

writes OUTDIR/CONFIG/k.spv, k.ttgir and meta.json.  The kernel is written the way
Triton users write weight-only int4 GEMMs (the GPTQ form): weights int32 [K / 8, N],
eight 4-bit codes of consecutive K rows per word, low nibble first; each K step loads
its [BLOCK_K, BLOCK_N] codes through pointers whose row is ``k // 8`` (eight rows of
the pointer tile share a word), shifts by ``(k % 8) * 4``, masks, subtracts the zero
point and multiplies the scale (f16, one row per group of ``GROUP`` rows of K), and
feeds ``tl.dot``.  x through a block pointer; f32 accumulation; f16 out.  The same
arithmetic as ops.matmul_wq (module xetile_dsl/ops/matmul_wq.py), in Triton's form.
"""
import sys

import peer_triton

peer_triton.prepare("cache-w4a16")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def w4a16(x_ptr, w_ptr, s_ptr, z_ptr, y_ptr, M, N, K, stride_xm, stride_wk, stride_sg, stride_ym,
          GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[M, N] = x[M, K] @ ((codes(w) - z) * s): codes row k = nibble k % 8 of w row k // 8."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rk = tl.arange(0, BLOCK_K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x_block = tl.make_block_ptr(x_ptr, (M, K), (stride_xm, 1), (pid_m * BLOCK_M, 0), (BLOCK_M, BLOCK_K), (1, 0))
    w_ptrs = w_ptr + (rk[:, None] // 8) * stride_wk + rn[None, :]
    shift = ((rk % 8) * 4)[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        g = k0 // GROUP
        s = tl.load(s_ptr + g * stride_sg + rn)[None, :]
        z = tl.load(z_ptr + g * stride_sg + rn)[None, :]
        x = tl.load(x_block, boundary_check=(0,))
        codes = (tl.load(w_ptrs) >> shift) & 0xF
        w = (codes.to(tl.float16) - z) * s
        acc += tl.dot(x, w)
        x_block = tl.advance(x_block, (0, BLOCK_K))
        w_ptrs += (BLOCK_K // 8) * stride_wk
    y = tl.make_block_ptr(y_ptr, (M, N), (stride_ym, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N),
                          (1, 0))
    tl.store(y, acc.to(tl.float16), boundary_check=(0, 1))


#: name -> (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, grf_mode): GEMV tiles (M = 1 runs in a
#: 16-row tile, tl.dot's smallest), one warp or four, BLOCK_K the group (128) or half of
#: it, the default register file or the large one Intel's autotune lists use
CONFIGS = {"m16-n32": (16, 32, 128, 1, "default"), "m16-n64-w4": (16, 64, 128, 4, "default"),
           "m16-n32-k64": (16, 32, 64, 1, "default"), "m16-n32-large": (16, 32, 128, 1, "large"),
           "m16-n64-w4-large": (16, 64, 128, 4, "large")}
GROUP = 128


def compile_config(name):
    bm, bn, bk, warps, grf = CONFIGS[name]
    sig = {"x_ptr": "*fp16", "w_ptr": "*i32", "s_ptr": "*fp16", "z_ptr": "*fp16", "y_ptr": "*fp16",
           "M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wk": "i32", "stride_sg": "i32",
           "stride_ym": "i32", "GROUP": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
           "BLOCK_K": "constexpr"}
    consts = {"GROUP": GROUP, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}
    options = {"num_warps": warps, "num_stages": 2, "threads_per_warp": 16}
    if grf == "large":
        options["grf_mode"] = "large"
    return peer_triton.compile_xpu(w4a16, sig, consts, options, tuple(a for a in sig if sig[a] != "constexpr"))


def main(out_dir, name):
    bm, bn, bk, warps, grf = CONFIGS[name]
    peer_triton.write_kernel(out_dir, name, compile_config(name), {
        "block_m": bm, "block_n": bn, "block_k": bk, "num_warps": warps, "grf_mode": grf, "group": GROUP})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
