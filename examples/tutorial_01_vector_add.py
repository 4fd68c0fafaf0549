"""Tutorial 1 — vector add: **tiles**.

A kernel never indexes single elements.  ``xt.init_tile(x, [row, col], [BM, BN])``
describes a BM x BN window of a 2-D array (a *tile*: base, offsets, shape); ``load_tile``
reads it into registers as one value, and ``store_tile`` writes a value back.  Each
program (``xt.program_id(0)``) handles one window.  Windows that stick out of the array
are fine: elements outside read as 0 and are never written, so the grid is simply
``ceil(N / BLOCK)`` and N needs no padding.  On PVC a tile load becomes 2D block
messages (``k.asm["xegpu"]`` shows them); on ARC, per-lane loads.

    python examples/tutorial_01_vector_add.py [N] [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def add_kernel(x, y, out, BLOCK: xt.constexpr):
    col = xt.program_id(0) * BLOCK                  # this program's window of the row
    tx = xt.init_tile(x, [0, col], [1, BLOCK])      # tiles are 2-D: a vector is a [1, N] array
    ty = xt.init_tile(y, [0, col], [1, BLOCK])
    xt.store_tile(xt.load_tile(tx) + xt.load_tile(ty), xt.init_tile(out, [0, col], [1, BLOCK]))


def main() -> None:
    n = int(next((a for a in sys.argv[1:] if a.isdigit()), 1000))
    launch = add_kernel.on("interpret") if "--interpret" in sys.argv else add_kernel
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, n)).astype(np.float32)
    y = rng.standard_normal((1, n)).astype(np.float32)
    out = np.zeros_like(x)
    BLOCK = 256
    launch[(-(-n // BLOCK),)](x, y, out, BLOCK=BLOCK)
    assert np.array_equal(out, x + y)               # one f32 add per element: exact match
    print(f"vector add of {n} floats: matches numpy exactly")


if __name__ == "__main__":
    main()
