"""Tutorial 2 — fused softmax: **reductions and broadcasting**.

A tile value reduces along an axis with ``xt.max(v, axis=1)`` / ``xt.sum(v, axis=1)``;
the reduced axis keeps size 1, so ``v - xt.max(v, axis=1)`` broadcasts the row maximum
back over the row (``xetile.tile_reduce`` + ``tile_broadcast`` in the IR).  The whole
softmax — max, exp, sum, divide — happens on registers after one load: the row is read
once and written once, where numpy makes five passes over memory.  The row is padded to a
power of two, ``BN``: ``mask=cols < N, other=-inf`` makes the columns past ``N`` read as
``-inf`` (still one block load, then a select), so they take no part in the max and add
``exp(-inf) = 0`` to the sum.  Rows longer than one
tile need a loop with a running max and sum (the online softmax): see
``xetile_dsl/ops/rows.py``, behind ``ops.softmax``.

    python examples/tutorial_02_fused_softmax.py [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def softmax_kernel(x, y, N, BM: xt.constexpr, BN: xt.constexpr):
    row = xt.program_id(0) * BM
    cols = xt.arange(0, BN)                                  # [1, BN] column indices
    v = xt.load_tile(xt.init_tile(x, [row, 0], [BM, BN]),    # columns past N read as -inf
                     mask=cols < N, other=float("-inf"))
    e = xt.exp(v - xt.max(v, axis=1))                        # [BM, 1] broadcast over [BM, BN]
    xt.store_tile(e / xt.sum(e, axis=1), xt.init_tile(y, [row, 0], [BM, BN]))


def main() -> None:
    launch = softmax_kernel.on("interpret") if "--interpret" in sys.argv else softmax_kernel
    M, N, BM, BN = 50, 200, 4, 256                           # BN: the row padded to a power of two
    x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32) * 4
    y = np.zeros_like(x)
    launch[(-(-M // BM),)](x, y, N, BM=BM, BN=BN)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    # f32: x - max rounds (2^-24 R through exp, R the row's range) and exp is 3 ulp, for each
    # e_i and the N-term sum (N 2^-24 more); the divide 2.5 ulp: relative (3R + N + 40) 2^-24
    rng_ = x.max(1, keepdims=True) - x.min(1, keepdims=True)
    assert np.all(np.abs(y - ref) <= ref * (3 * rng_ + N + 40) * 2.0 ** -24)
    print(f"fused softmax of {M}x{N}: max error {np.abs(y - ref).max():.1e}")


if __name__ == "__main__":
    main()
