"""Scattered tiles over SLM (xt.slm_alloc): scatter, masked gather with padding and atomic
adds, exact against numpy in every flavour (CPU device in both lane layouts, interpreter
whole-tile and per subgroup)."""
from __future__ import annotations

import numpy as np
import pytest

from .slm_scatter_kernels import slm_histogram_kernel, slm_masked_gather_kernel, slm_permute_kernel

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret", "interpret-subgroups"]
N = 32


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_scatter_into_slm_transposes(flavour):
    x = np.arange(N * N, dtype=np.float16).reshape(N, N)
    r, c = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
    idx = (c * N + r).astype(np.int32)            # element (r, c) goes to (c, r)
    y = np.zeros((N, N), np.float16)
    slm_permute_kernel.on(flavour)[(1,)](x, idx, y, N=N)
    np.testing.assert_array_equal(y, x.T)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_masked_gather_from_slm_pads(flavour):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, N)).astype(np.float32)
    idx = rng.integers(0, N * N, (N, N)).astype(np.int32)
    y = np.zeros((N, N), np.float32)
    slm_masked_gather_kernel.on(flavour)[(1,)](x, idx, y, N=N)
    ref = np.where(idx % 2 == 0, x.reshape(-1)[idx], -1.0).astype(np.float32)
    assert (idx % 2 == 0).any() and (idx % 2 == 1).any()   # both sides of the mask run
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_atomic_histogram_in_slm(flavour):
    bins = 16
    x = np.random.default_rng(8).integers(0, bins, (N, N)).astype(np.int32)
    out = np.zeros((1, bins), np.int32)
    slm_histogram_kernel.on(flavour)[(1,)](x, out, N=N, BINS=bins)
    np.testing.assert_array_equal(out[0], np.bincount(x.reshape(-1), minlength=bins))
