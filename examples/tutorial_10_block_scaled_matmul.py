"""Tutorial 10 — an MX block-scaled GEMM: **dot_scaled**.

OCP microscaling ("MX") stores a matrix as low-precision codes (fp8 e4m3 / e5m2, or fp4
e2m1 two per byte) plus one power-of-two scale (an e8m0 byte ``s``: ``2^(s - 127)``) per
32 consecutive elements along K.  ``c = (a * 2^sa) @ (b * 2^sb)`` with Triton's scale
layout: ``a_scale`` is ``[M, K/32]`` and ``b_scale`` ``[N, K/32]`` (one row per column of b).

One ``xt.dot_scaled`` call covers a whole K step of BK elements (any multiple of 32, as
Triton's ``tl.dot_scaled``): the kernel loads ``[BM, BK]`` and ``[BK, BN]`` codes with
their ``[BM, BK/32]`` and ``[BN, BK/32]`` scales.  For e2m1 the byte arrays are
``[M, K/2]`` and ``[K/2, N]`` (packed along K, low nibble first) and a K step is BK/2 bytes.

    python examples/tutorial_10_block_scaled_matmul.py [--interpret]
"""
import sys

import ml_dtypes
import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])  #: e2m1 code -> value


@xd.jit
def mx_matmul(a, a_scale, b, b_scale, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr,
              FORMAT: xt.constexpr):
    """c = (a * 2^(a_scale-127)) @ (b * 2^(b_scale-127)), f32 out, one BM x BN tile per program."""
    m, n = xt.program_id(0) * BM, xt.program_id(1) * BN
    KB = BK // 2 if FORMAT == "e2m1" else BK  # bytes of a row of a (column of b) per K step
    ta = xt.init_tile(a, [m, 0], [BM, KB])
    tb = xt.init_tile(b, [0, n], [KB, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        sa = xt.load_tile(xt.init_tile(a_scale, [m, k // 32], [BM, BK // 32]))
        sb = xt.load_tile(xt.init_tile(b_scale, [n, k // 32], [BN, BK // 32]))
        acc = xt.dot_scaled(xt.load_tile(ta), sa, xt.load_tile(tb), sb, acc, format=FORMAT)
        ta = xt.update_tile_offset(ta, 0, KB)
        tb = xt.update_tile_offset(tb, KB, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN]))


def matmul(a, a_scale, b, b_scale, format="e4m3", target=None, BM=16, BN=16, BK=64):
    """The f32 product; ``a``/``b`` fp8 arrays, or uint8 packed e2m1 for ``format="e2m1"``.
    M, N multiples of BM, BN; K a multiple of BK (a multiple of 32)."""
    M, N = a.shape[0], b.shape[1]
    K = a.shape[1] * (2 if format == "e2m1" else 1)
    c = np.zeros((M, N), np.float32)
    launch = mx_matmul.on(target) if target else mx_matmul
    launch[(M // BM, N // BN)](a, a_scale, b, b_scale, c, K, BM=BM, BN=BN, BK=BK, FORMAT=format)
    return c


def reference(a, a_scale, b, b_scale, format="e4m3"):
    """float64 reference: decode, scale, multiply (ml_dtypes for fp8 and the scales)."""
    if format == "e2m1":
        fa = np.stack([E2M1[a & 15], E2M1[a >> 4]], axis=2).reshape(a.shape[0], -1)
        fb = np.stack([E2M1[b & 15], E2M1[b >> 4]], axis=1).reshape(-1, b.shape[1])
    else:
        fa, fb = a.astype(np.float64), b.astype(np.float64)
    scale = lambda s: s.view(ml_dtypes.float8_e8m0fnu).astype(np.float64).repeat(32, axis=1)  # noqa: E731
    return (fa * scale(a_scale)) @ (fb * scale(b_scale).T)


def random_problem(M, N, K, format="e4m3", seed=0):
    rng = np.random.default_rng(seed)
    if format == "e2m1":
        a = rng.integers(0, 256, (M, K // 2)).astype(np.uint8)
        b = rng.integers(0, 256, (K // 2, N)).astype(np.uint8)
    else:
        dt = ml_dtypes.float8_e4m3fn if format == "e4m3" else ml_dtypes.float8_e5m2
        a, b = rng.standard_normal((M, K)).astype(dt), rng.standard_normal((K, N)).astype(dt)
    a_scale = rng.integers(117, 138, (M, K // 32)).astype(np.uint8)
    b_scale = rng.integers(117, 138, (N, K // 32)).astype(np.uint8)
    return a, a_scale, b, b_scale


if __name__ == "__main__":
    target = "interpret" if "--interpret" in sys.argv else None
    for fmt in ("e4m3", "e5m2", "e2m1"):
        problem = random_problem(32, 32, 128, fmt)
        c, ref = matmul(*problem, format=fmt, target=target), reference(*problem, format=fmt)
        print(f"{fmt}: max |c - ref| / max |ref| = {np.abs(c - ref).max() / np.abs(ref).max():.2e}")
