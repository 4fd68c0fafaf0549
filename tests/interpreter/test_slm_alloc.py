"""``xt.slm_alloc`` in the interpreter: one buffer per workgroup and alloc op, kept
across loop iterations in whole-tile mode as on the device (a Workgroup variable), and
shared by the subgroups in per-subgroup mode."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def _carry_through_slm(a, o):
    """Iteration k stores ``a``'s block k into an SLM buffer allocated in the loop body
    and reads back what iteration k - 1 left there (the same buffer)."""
    for k in range(0, 3):
        s = xt.slm_alloc([16, 32], xt.float32)
        t = xt.init_tile(s, [0, 0], [16, 32])
        old = xt.load_tile(t)
        xt.barrier()
        xt.store_tile(xt.load_tile(xt.init_tile(a, [0, k * 32], [16, 32])), t)
        xt.barrier()
        xt.store_tile(old, xt.init_tile(o, [0, k * 32], [16, 32]))


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_slm_buffer_in_a_loop_keeps_its_contents(target):
    a = np.random.default_rng(3).standard_normal((16, 96)).astype(np.float32)
    o = np.full((16, 96), np.nan, np.float32)
    _carry_through_slm.on(target)[(1,)](a, o)
    np.testing.assert_array_equal(o[:, 32:], a[:, :64])  # block 0 of o: SLM before any store


def test_whole_tile_and_per_subgroup_agree_on_the_rfc_ring():
    from xetile_dsl.kernels.gemm_slm_ring import gemm_slm_ring

    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (256, 96)).astype(np.float16)
    b = rng.integers(-3, 4, (96, 256)).astype(np.float16)
    whole = gemm_slm_ring(a, b, np.full((256, 256), np.nan, np.float32), "interpret")
    per_sg = gemm_slm_ring(a, b, np.full((256, 256), np.nan, np.float32), "interpret-subgroups")
    np.testing.assert_array_equal(whole, a.astype(np.float32) @ b.astype(np.float32))
    np.testing.assert_array_equal(per_sg, whole)
