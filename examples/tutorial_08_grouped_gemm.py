"""Tutorial 8 — a grouped GEMM: **array tables**.

A grouped GEMM computes ``C[g] = A[g] @ B[g]`` for G problems of different shapes in ONE
launch.  ``xd.array_table([...])`` passes each operand's G matrices as one argument; in the
kernel ``a[g]`` is entry g: ``xt.init_tile(a[g], [row, col], [BM, BK])`` tiles it and
``a[g].shape`` gives its extents at run time, so no size is a compile-time constant and
no group is padded.  As in Triton's tutorial, a fixed number of programs share out the
tiles of every group: program p takes tiles p, p + P, p + 2P, ... counted across the
groups (docs/decisions/027-array-tables.md has the table's memory layout).

Numpy entries are copied in and written back after the launch, like numpy arguments;
dpnp arrays and torch XPU tensors are used in place, on their queue; torch CUDA tensors
are used in place on an NVIDIA GPU (the kernel reads the table from a CUDA buffer the
launch fills with the entries' addresses and shapes).

    python examples/tutorial_08_grouped_gemm.py [--interpret | --cuda]
"""
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def grouped_matmul(a, b, c, G, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c[g] = a[g] @ b[g] for g < G (f16 in, f32 out), the tiles of all groups shared out."""
    tile = xt.program_id(0)
    last = 0                                   # tiles of the groups before g
    for g in range(G):
        m, k, n = a[g].shape[0], a[g].shape[1], b[g].shape[1]
        tiles_n = xt.cdiv(n, BN)
        tiles = xt.cdiv(m, BM) * tiles_n
        while tile >= last and tile < last + tiles:
            t = tile - last
            row, col = (t // tiles_n) * BM, (t % tiles_n) * BN
            ta = xt.init_tile(a[g], [row, 0], [BM, BK])
            tb = xt.init_tile(b[g], [0, col], [BK, BN])
            acc = xt.zeros([BM, BN], xt.float32)
            for _ in range(0, k, BK):          # past the edge tiles read zeros
                acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
                ta = xt.update_tile_offset(ta, 0, BK)
                tb = xt.update_tile_offset(tb, BK, 0)
            xt.store_tile(acc, xt.init_tile(c[g], [row, col], [BM, BN]))
            tile = tile + xt.num_programs(0)
        last = last + tiles


def grouped_matmul_host(a_list, b_list, target=None, programs=4, BM=16, BN=16, BK=16):
    """``[a @ b for a, b in zip(a_list, b_list)]`` in f32, in one launch of ``programs`` programs."""
    if isinstance(a_list[0], np.ndarray):
        c_list = [np.zeros((a.shape[0], b.shape[1]), np.float32) for a, b in zip(a_list, b_list)]
    else:       # torch tensors (XPU or CUDA): outputs on their device
        import torch
        c_list = [a.new_zeros((a.shape[0], b.shape[1]), dtype=torch.float32) for a, b in zip(a_list, b_list)]
    launch = grouped_matmul.on(target) if target else grouped_matmul
    launch[(programs,)](xd.array_table(a_list), xd.array_table(b_list), xd.array_table(c_list), len(a_list),
                        BM=BM, BN=BN, BK=BK)
    return c_list


def main() -> None:
    target = "interpret" if "--interpret" in sys.argv else None
    shapes = [(72, 40, 48), (33, 64, 35), (50, 32, 64), (17, 48, 40)]   # (M, N, K): none a multiple of 16
    rng = np.random.default_rng(0)
    a = [rng.standard_normal((m, k)).astype(np.float16) for m, n, k in shapes]
    b = [rng.standard_normal((k, n)).astype(np.float16) for m, n, k in shapes]
    if "--cuda" in sys.argv:    # torch CUDA tensors: the NVIDIA backend, for the GPU's architecture
        import torch
        c = [z.cpu().numpy() for z in grouped_matmul_host([torch.from_numpy(x).cuda() for x in a],
                                                          [torch.from_numpy(y).cuda() for y in b])]
    else:
        c = grouped_matmul_host(a, b, target)
    for x, y, z in zip(a, b, c):
        ref = x.astype(np.float64) @ y.astype(np.float64)
        k = x.shape[1]
        # f16 products are exact in f32; K f32 additions: (K + 1) 2^-24 sum |a b|
        bound = (k + 1) * 2.0 ** -24 * (np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64))
        assert np.all(np.abs(z - ref) <= bound)
    print(f"grouped matmul of {len(shapes)} problems {shapes} (M, N, K) in one launch: "
          "within the f32-accumulation bound")


if __name__ == "__main__":
    main()
