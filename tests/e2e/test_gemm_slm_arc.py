"""kernels/gemm_slm_arc.gemm_slm_a_kernel on the CPU device: A staged through a 16-wide SLM
buffer, read back with whole-block subgroup block messages on local memory in the ARC
flavour (codegen/emit/slm.py; the builtins are defined from their specification on the CPU),
per-lane in the PVC flavour.  Both against numpy, exactly."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl.kernels.gemm_slm_arc import gemm_slm_a_kernel


@pytest.mark.parametrize("target", ["cpu-arc", "cpu"])
def test_gemm_slm_a_exact(target):
    """64x128x48 over 64x64 workgroups of [2, 2] subgroups (3 K steps, 2 workgroups):
    small-integer f16 inputs, so every f32 sum is exact; C starts as NaN so an unwritten
    element shows."""
    rng = np.random.default_rng(12)
    m, n, k = 64, 128, 48
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    gemm_slm_a_kernel.on(target)[(m // 64, n // 64)](a, b, c, k, BM=64, BN=64, SM=2, SN=2)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
