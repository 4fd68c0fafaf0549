"""Tutorial 1 — vector add: **1-D tiles** (Triton's tutorial 01).

Each program (``xt.program_id(0)``) adds one BLOCK-sized piece of two vectors.  A kernel
never indexes single elements: ``xt.init_tile(x, [offset], [BLOCK])`` describes the
window ``x[offset : offset + BLOCK]`` of the 1-D array ``x`` (a *tile*: base, offset,
size); ``load_tile`` reads it into registers as one 1-D value, and ``store_tile`` writes a
value back.  Where Triton masks the last piece (``mask=offsets < n``), here the tile
does it: elements past the end of the array read as ``padding`` (0) and are never
written, so the grid is simply ``cdiv(n, BLOCK)`` and n needs no padding.  On PVC a 1-D
tile is read and written with 2D block messages (``k.asm["xegpu"]`` shows them); on ARC,
with per-lane loads and stores.

    python examples/tutorial_01_vector_add.py [N] [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def add_kernel(x, y, out, BLOCK: xt.constexpr):
    offset = xt.program_id(0) * BLOCK             # this program's piece of the vectors
    vx = xt.load_tile(xt.init_tile(x, [offset], [BLOCK]))
    vy = xt.load_tile(xt.init_tile(y, [offset], [BLOCK]))
    xt.store_tile(vx + vy, xt.init_tile(out, [offset], [BLOCK]))


def add(x: np.ndarray, y: np.ndarray, launch=add_kernel) -> np.ndarray:
    """``x + y`` for two 1-D float32 arrays of any length."""
    out = np.empty_like(x)
    BLOCK = 256
    launch[(xt.cdiv(x.shape[0], BLOCK),)](x, y, out, BLOCK=BLOCK)
    return out


def main() -> None:
    n = int(next((a for a in sys.argv[1:] if a.isdigit()), 98432))
    launch = add_kernel.on("interpret") if "--interpret" in sys.argv else add_kernel
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out = add(x, y, launch)
    assert np.array_equal(out, x + y)             # one f32 add per element: exact match
    print(f"vector add of {n} floats: matches numpy exactly")


if __name__ == "__main__":
    main()
