"""Tutorial 6 — a persistent GEMM: **device_properties** and **num_programs**.

A plain GEMM launches one workgroup per C tile.  A persistent one launches only as many
workgroups as the GPU runs at once -- one per Xe core here, from
``xd.device_properties()["multiprocessor_count"]`` (``.xe_cores``) -- and each loops over
the tiles ``program_id(0), program_id(0) + num_programs(0), ...``, so the launch costs
one wave whatever the problem size and each workgroup's set-up is paid once.
``num_stages=3`` asks for the A and B tiles to be prefetched two K steps ahead
(``xetile-prefetch-stages`` moves the kernel's ``prefetch_tile``).

On the CPU device (``cpu-pvc``, ``cpu-arc``) the properties are the emulated GPU's
(``props.emulated`` is True), so the grid is the one the GPU would get.

    python examples/tutorial_09_persistent_matmul.py [--interpret]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def persistent_matmul(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = a @ b (f16 in, f32 out); each workgroup computes every num_programs(0)-th tile."""
    tiles_n = xt.cdiv(N, BN)
    tiles = xt.cdiv(M, BM) * tiles_n
    for tile in range(xt.program_id(0), tiles, xt.num_programs(0)):
        m = (tile // tiles_n) * BM
        n = (tile % tiles_n) * BN
        ta = xt.init_tile(a, [m, 0], [BM, BK])
        tb = xt.init_tile(b, [0, n], [BK, BN])
        pa = xt.init_tile(a, [m, BK], [BM, BK])      # one step ahead; num_stages moves it
        pb = xt.init_tile(b, [BK, n], [BK, BN])
        acc = xt.zeros([BM, BN], xt.float32)
        for k in range(0, K, BK):
            xt.prefetch_tile(pa)
            xt.prefetch_tile(pb)
            acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
            ta = xt.update_tile_offset(ta, 0, BK)
            tb = xt.update_tile_offset(tb, BK, 0)
            pa = xt.update_tile_offset(pa, 0, BK)
            pb = xt.update_tile_offset(pb, BK, 0)
        xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN]))


def persistent_grid(M: int, N: int, BM: int, BN: int, props) -> tuple[int]:
    """One workgroup per Xe core, never more than there are tiles."""
    tiles = -(-M // BM) * -(-N // BN)
    return (max(1, min(tiles, props["multiprocessor_count"])),)


def matmul(a, b, target=None, num_stages=3, BM=16, BN=16, BK=32):
    """``a @ b`` in f32 with the persistent kernel, its grid sized from the device."""
    (M, K), N = a.shape, b.shape[1]
    c = np.zeros((M, N), np.float32)
    props = xd.device_properties(target=None if target in (None, "interpret") else target)
    launch = persistent_matmul.on(target) if target else persistent_matmul
    launch[persistent_grid(M, N, BM, BN, props)](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_stages=num_stages)
    return c


def main() -> None:
    target = "interpret" if "--interpret" in sys.argv else None
    M, N, K = 200, 168, 96            # 13 x 11 tiles of 16 x 16 (the last row and column partial): more
                                      # tiles than Xe cores, so each workgroup loops
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = matmul(a, b, target)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # f16 products are exact in f32; K f32 additions: (K + 1) 2^-24 sum |a b|
    bound = (K + 1) * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - ref) <= bound)
    props = xd.device_properties()
    print(f"persistent matmul {M}x{N}x{K} on {props.target} ({props.xe_cores} Xe cores"
          f"{', emulated' if props.emulated else ''}): within the f32-accumulation bound")


if __name__ == "__main__":
    main()
