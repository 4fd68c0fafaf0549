"""Compile time of one subgroup copying an N x N f16 tile (load_tile + store_tile), per
stage, and the time to the error for tiles past ``Target.max_subgroup_tile_bytes``.

    python benchmarks/compile_large_tiles.py [--sizes 128 256 512 1024] [--target pvc]

Blocking makes ops per block (descriptors, loads, stores, then their SIMT forms), so
every pass must be near linear in ops.  "spirv" is LLVM's SPIR-V backend (superlinear
in one huge basic block: LLVM's, not ours); "ocloc" is the ISA build that
``xd.compile`` adds for GPU targets when ocloc is installed.
"""
import argparse
import time

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import CompilationError


@xd.jit
def copy_tile(a, b, N: xt.constexpr):
    """One subgroup copies an N x N tile through registers."""
    t = xt.load_tile(xt.init_tile(a, [0, 0], [N, N]))
    xt.store_tile(t, xt.init_tile(b, [0, 0], [N, N]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 512, 1024])
    ap.add_argument("--target", default="pvc")
    opts = ap.parse_args()
    for n in opts.sizes:
        t0 = time.perf_counter()
        try:
            kernel = xd.compile(copy_tile, {"a": "f16[:,:]", "b": "f16[:,:]"}, {"N": n}, target=opts.target)
        except CompilationError as exc:
            first = str(exc).splitlines()[0]
            print(f"{n:5d}x{n}: refused after {time.perf_counter() - t0:6.2f} s: {first[:160]}...")
            continue
        total = time.perf_counter() - t0
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in kernel.timings.items())  # ocloc included
        ops = kernel.asm["xegpu"].count(" = ") + kernel.asm["xegpu"].count("xegpu.store_nd")
        print(f"{n:5d}x{n}: {total:6.2f} s ({stages}); ~{ops} XeGPU ops")


if __name__ == "__main__":
    main()
