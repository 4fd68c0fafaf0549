"""Compile and run a GEMM on the best device found; print the device, the error and the time.

    python examples/matmul.py [M N K] [--dtype f16|bf16] [--flavour pvc|arc]
"""
import argparse
import time

import numpy as np

import xetile_dsl  # noqa: F401 - sets up the OpenCL runtime before the device is opened
from xetile_dsl.kernels.matmul import matmul
from xetile_dsl.runtime.devices import get_device


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("shape", nargs="*", type=int, default=[512, 512, 512])
    ap.add_argument("--dtype", choices=["f16", "bf16"], default="f16")
    ap.add_argument("--flavour", choices=["pvc", "arc"], default="pvc",
                    help="GPU kernel flavour to run when the device is the CPU")
    args = ap.parse_args()
    M, N, K = (args.shape + [512] * 3)[:3]
    device = get_device()
    target = None if device.kind == "gpu" else f"cpu-{args.flavour}"
    if args.dtype == "bf16":
        import ml_dtypes
        dt = ml_dtypes.bfloat16
    else:
        dt = np.float16
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    t0 = time.perf_counter()
    c = matmul(a, b, target=target)
    t1 = time.perf_counter()
    c = matmul(a, b, target=target)
    t2 = time.perf_counter()
    ref = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.abs(c - ref).max())
    print(f"device: {device.describe()}")
    print(f"kernel: {args.dtype} GEMM {M}x{N}x{K}, flavour {target or device.target_name}")
    print(f"max abs error vs numpy: {err:.3e}  (max |ref| {np.abs(ref).max():.1f})")
    print(f"first call (compile or cache load + run): {t1 - t0:.3f} s; cached call: {(t2 - t1) * 1e3:.1f} ms "
          f"({2 * M * N * K / (t2 - t1) / 1e9:.2f} GFLOP/s)")


if __name__ == "__main__":
    main()
