"""Tutorial 3 — GEMM with an epilogue: **tile_mma**.

``xt.tile_mma(a, b, acc)`` multiplies a [BM, BK] by a [BK, BN] tile value into an f32
accumulator on the matrix engine (DPAS): f16 products are exact, sums are f32.  The K
loop moves the A and B tiles with ``update_tile_offset`` (no address arithmetic).  After
the loop the accumulator is still in registers, so the bias, the activation and the
conversion to f16 cost no memory traffic: that is the epilogue.  ``ops.matmul`` is this
kernel with every choice (transposes, activation, dtypes) a constexpr.

    python examples/tutorial_03_gemm_epilogue.py [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def linear_relu(a, b, bias, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = f16(relu(a @ b + bias)): a [M, K], b [K, N] f16, bias [1, N] f32."""
    m, n = xt.program_id(0) * BM, xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK])
    tb = xt.init_tile(b, [0, n], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    y = xt.maximum(acc + xt.load_tile(xt.init_tile(bias, [0, n], [1, BN])), 0.0)   # the epilogue
    xt.store_tile(xt.astype(y, xt.float16), xt.init_tile(c, [m, n], [BM, BN]))


def main() -> None:
    launch = linear_relu.on("interpret") if "--interpret" in sys.argv else linear_relu
    M, N, K, BM, BN, BK = 100, 80, 96, 32, 32, 32
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    c = np.zeros((M, N), np.float16)
    launch[(-(-M // BM), -(-N // BN))](a, b, bias, c, K, BM=BM, BN=BN, BK=BK)
    ref = np.maximum(a.astype(np.float64) @ b + bias, 0)
    # f32 sums of exact products: (K + 1) 2^-24 sum|a b|, then the f16 rounding: 2^-11 |c|
    bound = (K + 1) * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b)) + 2.0 ** -11 * np.abs(ref) + 2.0 ** -25
    assert np.all(np.abs(c - ref) <= bound)
    print(f"linear + relu {M}x{N}x{K}: within the f32-accumulation + f16-rounding bound")


if __name__ == "__main__":
    main()
