"""Where a GEMM's time goes on an NVIDIA GPU: each contender timed four ways in one run,
so host cost and kernel time are told apart, and ``ops.matmul``'s sm90 kernel at other
tiles, stage counts and group sizes.

    python benchmarks/gemm_split_cuda.py [--sizes 4096,8192] [--no-sweep] [--shapes 128x4096x4096,...]

For f16 (and bf16) squares: torch.matmul (cuBLAS), ``ops.matmul``, its grouped kernel
launched directly, and a Triton GEMM of the same algorithm (``peer_gemm_triton.grouped_gemm``
at 128x256x64 blocks, grouped order, f16 out), each as

* ``1 call``: CUDA events around one call (host cost shows where the GPU waits for it);
* ``stream``: events around 10 calls back to back, per call (the host launches ahead);
* ``kernel``: the kernels' own durations (torch profiler / CUPTI);
* ``host``: microseconds a call takes to return.

``--shapes MxNxK,...`` times skinny GEMMs (LLM decode and prefill token counts) the same
way, with the grouped kernel at each of :data:`SKINNY_TILES` (BM 64 or 128; the grid of
programs against the GPU's SMs is what a small M leaves to choose).

All in TFLOP/s (2 M N K flops) except ``host``.  Prints one table; with ``$OUT`` set,
writes it to ``$OUT/gemm_split_cuda.txt`` too."""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_events import median_ms, report  # noqa: E402
from vs_cuda_attention import bench_stream, host_us, kernel_ms  # noqa: E402

import xetile_dsl.language as xt  # noqa: E402
from xetile_dsl import ops  # noqa: E402
from xetile_dsl.ops.matmul import _bias_row, matmul_grouped_kernel  # noqa: E402

import peer_gemm_triton  # noqa: E402
from peer_gemm_triton import triton  # noqa: E402  (None without Triton: the peer is optional)


#: the tiles a skinny GEMM is timed at: (BM, BN, BK); warps BM / 16 (the wgmma path)
SKINNY_TILES = ((128, 256, 64), (128, 128, 64), (64, 256, 64), (64, 128, 64), (64, 64, 64))


def triton_gemm(a, b, c, BM=128, BN=256, BK=64, warps=8, stages=3, GM=8):
    """peer_gemm_triton's grouped GEMM (the kernel vs_cuda.py autotunes) at one config."""
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    return peer_gemm_triton.grouped_gemm.fn[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), GM=GM,
                                                  BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)


def direct(a, b, c, BM, BN, BK, GM=8, **options):
    """ops.matmul's grouped kernel launched directly (f16/bf16 out like the input)."""
    M, K = a.shape
    N = b.shape[1]
    bias = _bias_row(None, N, a)
    out = xt.float16 if a.dtype == torch.float16 else xt.bfloat16
    grid = (-(-M // BM), -(-N // BN))
    return lambda: matmul_grouped_kernel[grid](a, b, bias, c, K, TA=False, TB=False, HAS_BIAS=False, ACT=0,
                                               ACC=xt.float32, OUT=out, BM=BM, BN=BN, BK=BK, GM=GM, **options)


def measure(fn, flops: float) -> str:
    fn()
    torch.cuda.synchronize()
    one = median_ms(fn, 20, warmup=3)
    stream = bench_stream(fn, inner=10, reps=8)
    kern = kernel_ms(fn, reps=10)
    host = host_us(fn, calls=20)
    rate = lambda ms: flops / ms / 1e9   # noqa: E731
    return f"{rate(one):8.1f} {rate(stream):8.1f} {rate(kern):8.1f} {host:8.1f}"


def skinny(shapes: str, lines: list, row) -> None:
    """f16 ``MxNxK`` GEMMs: cuBLAS, ops.matmul, the grouped kernel at each skinny tile
    (its programs in the name, its error against an f32 product as a check line)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for shape in shapes.split(","):
        m, n, k = map(int, shape.split("x"))
        a, b = torch.randn(m, k, device="cuda", dtype=torch.float16), torch.randn(k, n, device="cuda",
                                                                                  dtype=torch.float16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        flops, ref = 2.0 * m * n * k, a.float() @ b.float()
        row(f"torch.matmul {shape}", lambda: torch.matmul(a, b), flops)
        row(f"ops.matmul {shape}", lambda: ops.matmul(a, b, out=c), flops)
        for bm, bn, bk in SKINNY_TILES:
            programs = -(-m // bm) * -(-n // bn)
            fn = direct(a, b, c, bm, bn, bk, num_warps=bm // 16)
            label = f"direct {bm}x{bn}x{bk} {shape} ({programs} programs / {sms} SMs)"
            row(label, fn, flops)
            try:
                c.zero_()
                fn()
                torch.cuda.synchronize()
                lines.append(f"check {label} rel error {float((c.float() - ref).norm() / ref.norm()):.2e}")
            except Exception as exc:  # noqa: BLE001
                lines.append(f"check {label} FAILED {type(exc).__name__}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--dtypes", default="f16")
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--shapes", default="", help="MxNxK,... skinny shapes at every SKINNY_TILES tile")
    args = p.parse_args()
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"
             + (f"  triton {triton.__version__}" if triton else ""),
             f"{'case':52} {'1 call':>8} {'stream':>8} {'kernel':>8} {'host us':>8}   (TFLOP/s)"]

    def row(name, fn, flops):
        try:
            text = measure(fn, flops)
        except Exception as exc:  # noqa: BLE001 -- a failed variant is a line
            text = f"FAILED {type(exc).__name__}: {str(exc)[:150]}"
        lines.append(f"{name:52} {text}")
        print(lines[-1], flush=True)

    if args.shapes:
        skinny(args.shapes, lines, row)
        args.sizes = ""
    for dname in args.dtypes.split(","):
        dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[dname]
        for s in (map(int, args.sizes.split(",")) if args.sizes else ()):
            a, b = (torch.randn(s, s, device="cuda", dtype=dtype) for _ in range(2))
            c = torch.empty(s, s, device="cuda", dtype=dtype)
            flops = 2.0 * s ** 3
            ref = (a.float() @ b.float())
            row(f"torch.matmul {dname} {s}^3", lambda: torch.matmul(a, b), flops)
            row(f"ops.matmul {dname} {s}^3", lambda: ops.matmul(a, b, out=c), flops)
            err = float((c.float() - ref).norm() / ref.norm())
            lines.append(f"check ops.matmul {dname} {s}^3 rel error {err:.2e}")
            if triton is not None:
                row(f"triton 128x256x64 w8 s3 g8 {dname} {s}^3", lambda: triton_gemm(a, b, c), flops)
                row(f"triton 128x256x64 w8 s4 g8 {dname} {s}^3", lambda: triton_gemm(a, b, c, stages=4), flops)
            variants = [((128, 256, 64), {}), ((128, 256, 64), {"num_stages": 3}), ((128, 256, 64), {"GM": 16}),
                        ((128, 128, 64), {"num_warps": 8})]
            if args.no_sweep or s > 4096 or dname != "f16":
                variants = variants[:1]
            for (BM, BN, BK), opt in variants:
                opt = dict(opt)
                GM = opt.pop("GM", 8)
                fn = direct(a, b, c, BM, BN, BK, GM, **opt)
                label = f"direct {BM}x{BN}x{BK} g{GM}" + "".join(f" {k}={v}" for k, v in opt.items())
                row(f"{label} {dname} {s}^3", fn, flops)
                try:
                    c.zero_()
                    fn()
                    torch.cuda.synchronize()
                    err = float((c.float() - ref).norm() / ref.norm())
                    lines.append(f"check {label} rel error {err:.2e}")
                except Exception as exc:  # noqa: BLE001
                    lines.append(f"check {label} FAILED {type(exc).__name__}")
    report(lines, "gemm_split_cuda.txt")


if __name__ == "__main__":
    main()
