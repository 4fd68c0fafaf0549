"""Tutorial 6 — seeded dropout: **random numbers without a mask in memory**.

Dropout zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``.
Instead of drawing a mask on the host and storing it for the backward pass, the kernel
draws it: ``xt.rand(seed, offsets)`` is a pure function of the seed and each element's
offset (Philox4x32-10, bit for bit as Triton's ``tl.rand``), so the same seed gives the
same mask in the forward and the backward kernel, in every program and every flavour,
and the mask is never written anywhere.  The offsets are the elements' indices in the
whole array, so each element gets its own number whatever the tiling.  The random
numbers are plain element-wise integer arithmetic: the kernel's only memory traffic is
its two tiles (2D block messages on PVC).

    python examples/tutorial_06_dropout.py [N] [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.interpreter import philox


@xd.jit
def dropout_kernel(x, out, n_cols, p, seed, BM: xt.constexpr, BN: xt.constexpr):
    row, col = xt.program_id(0) * BM, xt.program_id(1) * BN
    v = xt.load_tile(xt.init_tile(x, [row, col], [BM, BN]))
    rows = xt.transpose(xt.arange(0, BM)) + row          # [BM, 1] global row indices
    cols = xt.arange(0, BN) + col                        # [1, BN] global column indices
    keep = xt.rand(seed, rows * n_cols + cols) > p       # the mask: drawn, never stored
    xt.store_tile(xt.where(keep, v * (1.0 / (1.0 - p)), 0.0), xt.init_tile(out, [row, col], [BM, BN]))


def dropout(x: np.ndarray, p: float, seed: int, launch=dropout_kernel) -> np.ndarray:
    out = np.zeros_like(x)
    BM, BN = 8, 32
    launch[(-(-x.shape[0] // BM), -(-x.shape[1] // BN))](x, out, x.shape[1], p, seed, BM=BM, BN=BN)
    return out


def reference(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    """numpy: the same Philox draws (xetile_dsl.interpreter.philox) and the same f32 scale."""
    offsets = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    scale = np.float32(1.0) / (np.float32(1.0) - np.float32(p))
    return np.where(philox.rand(seed, offsets) > np.float32(p), x * scale, np.float32(0.0))


def main() -> None:
    n = int(next((a for a in sys.argv[1:] if a.isdigit()), 64))
    launch = dropout_kernel.on("interpret") if "--interpret" in sys.argv else dropout_kernel
    x = np.random.default_rng(0).standard_normal((n, 96)).astype(np.float32) + 3.0   # never 0
    p, seed = 0.3, 0x5EED
    out = dropout(x, p, seed, launch)
    again = dropout(x, p, seed, launch)
    assert np.array_equal(out, again)                # the same seed draws the same mask
    # the mask and one f32 multiply by the f32 scale per kept element: exact
    assert np.array_equal(out, reference(x, p, seed))
    kept = np.count_nonzero(out) / out.size
    # 6144 Bernoulli(0.7) draws: 5 standard deviations (sqrt(0.21 / 6144) = 0.006) is 0.03
    assert abs(kept - (1 - p)) < 0.03, kept
    print(f"dropout of {out.size} floats with p={p}: {kept:.3f} kept, matches the numpy reference exactly")


if __name__ == "__main__":
    main()
