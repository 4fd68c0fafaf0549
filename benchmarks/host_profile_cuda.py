"""Where an ``ops`` call's host time goes on a CUDA GPU: ``cProfile`` over many calls of
``ops.matmul``, ``ops.softmax``, ``ops.layer_norm`` and ``ops.attention`` on torch CUDA
tensors (launches queue on the GPU; a synchronize every 50 calls keeps the queue short),
after warm-up calls that compile and cache each kernel.

    python benchmarks/host_profile_cuda.py [--calls 400] [--top 25] [--op matmul]

Prints, per op, microseconds a call (wall clock, no profiler) and the profile's top
functions by own time; with ``$OUT`` set, writes it to ``$OUT/host_profile_cuda.txt``."""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

import torch

from xetile_dsl import ops


def cases():
    a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.float16)
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    w, bb = (torch.randn(8192, device="cuda", dtype=torch.float16) for _ in range(2))
    q, k, v = (torch.randn(1, 8, 1024, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    return {"matmul": lambda: ops.matmul(a, b, out=c), "matmul_alloc": lambda: ops.matmul(a, b),
            "softmax": lambda: ops.softmax(x, out=y), "layer_norm": lambda: ops.layer_norm(x, w, bb, out=y),
            "rms_norm": lambda: ops.rms_norm(x, w, out=y),
            "attention": lambda: ops.attention(q, k, v, causal=True)}


def calls(fn, n: int) -> None:
    for i in range(n):
        fn()
        if i % 50 == 49:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--op", default="")
    args = p.parse_args()
    out = []
    for name, fn in cases().items():
        if args.op and args.op != name:
            continue
        calls(fn, 5)
        t = time.perf_counter()
        for _ in range(50):
            fn()
        host = (time.perf_counter() - t) / 50 * 1e6
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        calls(fn, args.calls)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(args.top)
        out.append(f"=== {name}: {host:.1f} us a call (host, unprofiled)\n" + text.getvalue())
        print(out[-1], flush=True)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "host_profile_cuda.txt"), "w") as f:
            f.write("\n".join(out))


if __name__ == "__main__":
    main()
