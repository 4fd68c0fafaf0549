"""Scattered tiles on the CPU device (PVC and ARC flavours) against numpy: gather with a
computed index tile and a mask, masked scatter, atomic accumulation across workgroups."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from kernels.scattered import (atomic_accumulate_kernel, block_partial_sums_kernel, gather_kernel,
                                          scatter_kernel)

FLAVOURS = ["pvc", "arc"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_gather_computed_index_with_mask(flavour):
    n = 100
    src = (np.arange(n, dtype=np.float32) + 0.5).reshape(1, n)
    idx = np.random.default_rng(0).integers(0, 64, (1, 64)).astype(np.int32)
    out = np.full((1, 64), -1, np.float32)
    gather_kernel.on(f"cpu-{flavour}")[(2,)](src, idx, out, n, N=32)
    offs = idx[0] * 2 + 1
    ref = np.where(offs < n, src[0, np.minimum(offs, n - 1)], 0)
    assert (offs >= n).any() and (offs < n).any()  # both sides of the mask are exercised
    np.testing.assert_array_equal(out[0], ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_masked_scatter(flavour):
    src = np.arange(64, dtype=np.float32).reshape(1, 64)
    perm = np.random.default_rng(1).permutation(64).astype(np.int32).reshape(1, 64)
    out = np.full((1, 64), -1, np.float32)
    scatter_kernel.on(f"cpu-{flavour}")[(2,)](src, perm, out, N=32)
    ref = np.full(64, -1, np.float32)
    keep = perm[0] % 3 != 0
    ref[perm[0][keep]] = src[0][keep] * 2
    np.testing.assert_array_equal(out[0], ref)


def _accumulate_ref(x, idx, width, kind):
    op = {"add": np.add, "max": np.maximum, "min": np.minimum}[kind]
    ref = np.zeros(width, x.dtype)
    for g in range(x.shape[0]):
        for lane, target in enumerate(idx[0]):
            ref[target] = op(ref[target], x[g, lane])
    return ref


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_atomic_accumulation_across_workgroups(kind, dtype, flavour):
    """12 workgroups x 32 lanes hit 8 elements: 48 concurrent updates per element; integer
    results (and float ones, on small integers) are exact whatever the order."""
    G, N, width = 12, 32, 16
    x = np.random.default_rng(2).integers(-1000, 1000, (G, N)).astype(dtype)
    idx = (np.arange(N) % 8).astype(np.int32).reshape(1, N)
    out = np.zeros((1, width), dtype)
    atomic_accumulate_kernel.on(f"cpu-{flavour}")[(G,)](x, idx, out, KIND=kind, N=N)
    np.testing.assert_array_equal(out[0], _accumulate_ref(x, idx, width, kind))


def test_scattered_tile_narrower_than_a_subgroup_is_a_clear_error():
    @xd.jit
    def narrow(src, idx, out):
        i = xt.load_tile(xt.init_tile(idx, [0, 0], [2, 8]))
        xt.store_tile(xt.load_gather(xt.init_tile(src, i)), xt.init_tile(out, [0, 0], [2, 8]))

    sig = {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]"}
    with pytest.raises(CompilationError, match=r"scattered tile must be \[R, C\] with C a multiple of the subgroup"):
        xd.compile(narrow, sig, {}, target="pvc")


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype,kind", [(np.int32, "add"), (np.float32, "add"), (np.int32, "max"),
                                        (np.float32, "min")])
def test_block_tile_atomic_partial_results(dtype, kind, flavour):
    """4 workgroups per 16x16 block each fold the sum of 2 slabs into ``out``, whose 40 rows
    end inside the last block row (the rest is masked off)."""
    G, R, SLAB = 4, 2, 64
    x = np.random.default_rng(5).integers(-1000, 1000, (G * R * SLAB, 48)).astype(dtype)
    out = np.zeros((40, 48), dtype)
    block_partial_sums_kernel.on(f"cpu-{flavour}")[(SLAB // 16, 48 // 16, G)](x, out, KIND=kind, SLAB=SLAB, R=R,
                                                                             BM=16, BN=16)
    partial = x.reshape(G, R, SLAB, 48).sum(1)[:, :40]
    op = {"add": np.add, "max": np.maximum, "min": np.minimum}[kind]
    np.testing.assert_array_equal(out, op.reduce(partial, axis=0, initial=0).astype(dtype))
