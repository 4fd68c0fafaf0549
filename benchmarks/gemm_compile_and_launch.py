"""Cold compile time of the GEMM kernel and per-launch overhead of a cached launch
against a bare dpctl submit of the same SPIR-V with the same arguments (same run).

    python benchmarks/gemm_compile_and_launch.py [--reps 200]
"""
import argparse
import statistics
import tempfile
import time

import numpy as np

from xetile_dsl import compiler
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.runtime.devices import get_device
from xetile_dsl.runtime.launchers import Launcher

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
CONST = {"BM": 32, "BN": 32, "BK": 16}


def cold_compile(target: str) -> tuple[float, object]:
    t0 = time.perf_counter()
    kernel = compiler.compile_kernel(matmul_kernel.fn, compiler.parse_signature(SIG), CONST, target)
    return time.perf_counter() - t0, kernel


def median_us(fn, reps: int) -> float:
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    device = get_device()
    print(f"device: {device.describe()}")
    for target in ("pvc", "arc", "cpu-pvc", "cpu-arc"):
        seconds, kernel = cold_compile(target)
        print(f"cold compile {target:8s} Python source -> SPIR-V: {seconds * 1e3:7.1f} ms "
              f"({len(kernel.spirv)} bytes)")
    seconds, kernel = cold_compile("cpu-pvc")
    t0 = time.perf_counter()
    loaded = Launcher(device).build(kernel.spirv, kernel.abi)
    print(f"program build on {device.name}: {(time.perf_counter() - t0) * 1e3:.1f} ms "
          f"(source -> built program: {(seconds + time.perf_counter() - t0) * 1e3:.1f} ms)")

    n = args.size
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype(np.float16), rng.standard_normal((n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    grid = (n // 32, n // 32)
    with tempfile.TemporaryDirectory():
        launch = matmul_kernel.on("cpu-pvc")[grid]
        launch(a, b, c, n, **CONST)  # compile + cache
        cached = median_us(lambda: launch(a, b, c, n, **CONST), args.reps)
    prepared = loaded.prepare(grid, [a, b, c, n])
    queue = loaded.queue
    bare = median_us(lambda: queue.submit(loaded.native_kernel, prepared.native_args, prepared.global_size,
                                          prepared.local_size).wait(), args.reps)
    print(f"{n}x{n}x{n} GEMM launch, median of {args.reps}: cached kernel[grid](...) {cached:.1f} us "
          f"(includes numpy copies in/out), bare dpctl submit+wait {bare:.1f} us, ratio {cached / bare:.2f}x")


if __name__ == "__main__":
    main()
