"""Tutorial 4 — layer norm: **loops over tiles with loop-carried statistics**.

A row wider than a tile is walked in chunks: ``for c in range(0, N, BC)`` is a real loop
in the kernel (not unrolled), and values assigned in it — the [BM, 1] running sums — are
carried from one iteration to the next in registers.  Layer norm walks the row three
times: the sum (mean), the squared deviations (variance: the two-pass form, exact enough
even when the mean is large), then the normalised output with the weight and bias rows.
``ops.layer_norm`` and ``ops.rms_norm`` are this kernel.

    python examples/tutorial_04_layer_norm.py [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def layer_norm(x, w, b, y, N, eps, BM: xt.constexpr, BC: xt.constexpr):
    row = xt.program_id(0) * BM
    total = xt.zeros([BM, 1], xt.float32)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    for c in range(0, N, BC):                       # pass 1: the mean (padding reads as 0)
        total = total + xt.sum(xt.load_tile(tx), axis=1)
        tx = xt.update_tile_offset(tx, 0, BC)
    mean = total / N
    squares = xt.zeros([BM, 1], xt.float32)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    for c in range(0, N, BC):                       # pass 2: the variance, padding masked
        d = xt.where(xt.arange(0, BC) + c < N, xt.load_tile(tx) - mean, 0.0)
        squares = squares + xt.sum(d * d, axis=1)
        tx = xt.update_tile_offset(tx, 0, BC)
    rstd = xt.rsqrt(squares / N + eps)
    tx, ty = xt.init_tile(x, [row, 0], [BM, BC]), xt.init_tile(y, [row, 0], [BM, BC])
    tw, tb = xt.init_tile(w, [0, 0], [1, BC]), xt.init_tile(b, [0, 0], [1, BC])
    for c in range(0, N, BC):                       # pass 3: normalise, scale, shift
        xt.store_tile((xt.load_tile(tx) - mean) * rstd * xt.load_tile(tw) + xt.load_tile(tb), ty)
        tx, ty = xt.update_tile_offset(tx, 0, BC), xt.update_tile_offset(ty, 0, BC)
        tw, tb = xt.update_tile_offset(tw, 0, BC), xt.update_tile_offset(tb, 0, BC)


def main() -> None:
    launch = layer_norm.on("interpret") if "--interpret" in sys.argv else layer_norm
    M, N, BM, BC = 30, 1000, 4, 256
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((M, N)) * 2 + 5).astype(np.float32)
    w, b = rng.standard_normal((1, N)).astype(np.float32), rng.standard_normal((1, N)).astype(np.float32)
    y = np.zeros_like(x)
    launch[(-(-M // BM),)](x, w, b, y, N, 1e-5, BM=BM, BC=BC)
    x64 = x.astype(np.float64)
    rstd = 1 / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    ref = (x64 - x64.mean(1, keepdims=True)) * rstd * w + b
    # f32 sums of N terms in N / BC chunks err by eps_n relative: the mean by eps_n mean|x|
    # (times rstd |w| in y); the variance by eps_n plus twice the mean's error over the
    # standard deviation, and rsqrt adds 2 ulp: all relative to |y - b|
    eps_n = (N + N // BC + 3) * 2.0 ** -24
    mean_abs = np.abs(x64).mean(1, keepdims=True)
    bound = eps_n * mean_abs * rstd * np.abs(w) + np.abs(ref - b) * (eps_n * (1 + 2 * mean_abs * rstd) + 8 * 2.0 ** -24) \
        + 2.0 ** -24 * np.abs(ref)
    assert np.all(np.abs(y - ref) <= bound)
    print(f"layer norm of {M}x{N}: max error {np.abs(y - ref).max():.1e}")


if __name__ == "__main__":
    main()
