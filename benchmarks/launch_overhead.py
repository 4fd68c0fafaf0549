"""Per-launch cost of a cached kernel with 4 array and 3 scalar arguments on dpnp USM arrays,
against a bare dpctl ``submit_async`` of the same SPIR-V with the same arguments (same run).

    python benchmarks/launch_overhead.py [--launches 2000] [--rounds 7]

Both loops enqueue ``--launches`` kernels and then wait for the queue once, so each
number is the cost of one asynchronous launch as a Python caller sees it (a 1x1 grid
of a 32x32 GEMM tile: the device work is small next to the submit).  The ratio
``xetile_dsl / bare`` is the launch path's overhead; the goal is <= 1.5.  Rounds of the
two loops alternate; the script prints the medians over rounds, their ratio, and the
median and range of the per-round ratios.
"""
import argparse
import statistics
import time

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.runtime.opencl_icd import setup_intel_cpu_icd


@xd.jit
def gemm2(a, b, c, d, K, row0, col0, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = d = a[row0:, :] @ b[:, col0:] for one BM x BN tile per workgroup."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(a, [row0 + pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, col0 + pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))
    xt.store_tile(acc, xt.init_tile(d, [pid_m * BM, pid_n * BN], [BM, BN]))


def per_launch_us(loop, queue, launches: int) -> float:
    """Microseconds per launch of ``loop(launches)`` including one final wait."""
    queue.wait()
    t0 = time.perf_counter()
    loop(launches)
    queue.wait()
    return (time.perf_counter() - t0) / launches * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=32)
    opts = ap.parse_args()
    setup_intel_cpu_icd()
    import dpctl
    import dpnp

    queue = dpctl.SyclQueue("opencl:cpu")
    n = opts.n
    rng = np.random.default_rng(0)
    a = dpnp.asarray(rng.integers(-2, 3, (n, n)).astype(np.float16), sycl_queue=queue)
    b = dpnp.asarray(rng.integers(-2, 3, (n, n)).astype(np.float16), sycl_queue=queue)
    c = dpnp.zeros((n, n), dtype=np.float32, sycl_queue=queue)
    d = dpnp.zeros((n, n), dtype=np.float32, sycl_queue=queue)
    const = {"BM": 32, "BN": 32, "BK": 32}
    grid = (n // 32, n // 32)
    gemm2[grid](a, b, c, d, n, 0, 0, **const)          # compile (or load) once
    xd.synchronize()
    expected = dpnp.asnumpy(a).astype(np.float32) @ dpnp.asnumpy(b).astype(np.float32)
    assert np.array_equal(dpnp.asnumpy(d), expected), "kernel result is wrong"

    (loaded, _), = gemm2._fast.values()
    prep = loaded.prepare(grid, [a, b, c, d, n, 0, 0])
    kernel, args, gs, ls = loaded.native_kernel, prep.native_args, prep.global_size, prep.local_size

    def bare(count):
        submit = queue.submit_async
        for _ in range(count):
            submit(kernel, args, gs, ls)

    def ours(count):
        launch = gemm2[grid]
        for _ in range(count):
            launch(a, b, c, d, n, 0, 0, BM=32, BN=32, BK=32)
        xd.synchronize()

    bare_us, ours_us = [], []
    for _ in range(opts.rounds):                           # interleaved rounds against drift
        bare_us.append(per_launch_us(bare, queue, opts.launches))
        ours_us.append(per_launch_us(ours, queue, opts.launches))
    b_med, o_med = statistics.median(bare_us), statistics.median(ours_us)
    print(f"device: {queue.sycl_device.name} ({queue.sycl_device.backend.name})")
    print(f"kernel: 4 USM arrays ({n}x{n}) + 3 scalars, grid {grid}, {opts.launches} launches x {opts.rounds} rounds")
    print(f"bare dpctl submit_async : {b_med:8.2f} us/launch")
    print(f"xetile_dsl kernel[grid] : {o_med:8.2f} us/launch")
    ratios = sorted(o / b for o, b in zip(ours_us, bare_us))     # per round: same drift on both
    print(f"ratio of medians        : {o_med / b_med:8.2f}x  (goal <= 1.5x); python overhead "
          f"{o_med - b_med:.2f} us")
    print(f"per-round ratios        : median {statistics.median(ratios):.2f}x, "
          f"range {ratios[0]:.2f}x .. {ratios[-1]:.2f}x")


if __name__ == "__main__":
    main()
