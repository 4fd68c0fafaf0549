"""ARC GEMMs computed as C^T = B^T.A^T with per-lane row loads (lowering/passes/wg_to_sg/operand_swap.py,
codegen/builtins/transposed_loads.py ``_lane_rows``), run on the CPU device in the ARC flavour
(cpu-arc: the same kernel body, 8 lanes) against numpy, exactly: small integers make
every product and sum exact in f32.  C is prefilled with NaN, so a piece no subgroup
stored, or a transposed store that missed, shows.

Shapes exercise both paths of each load: blocks inside the arrays (one vector load per
lane and row run) and blocks leaving them (the cold per-lane loop): M, N not multiples
of the tiles, a K tail shorter than the K step (columns of A^T / rows of B^T past K), an
odd K (rows of A only 2-byte aligned: the dword-alignment test fails everywhere), and
the RFC 2.1 program's two K-loop copies with each copy's C^T stored between them."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xetile_dsl.kernels.gemm_wg import ARC_TILES, gemm_prefetch, gemm_wg, gemm_wg_configs


def _operands(M, N, K, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (M, K)).astype(dtype)
    b = rng.integers(-3, 4, (K, N)).astype(dtype)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("M,N,K", [(136, 120, 40), (96, 72, 19)])
def test_arc_tiles_swapped_gemm_is_exact(M, N, K, dtype):
    a, b, ref = _operands(M, N, K, dtype, M + N + K)
    c = gemm_wg(a, b, np.full((M, N), np.nan, np.float32), target="cpu-arc", **ARC_TILES)
    np.testing.assert_array_equal(c, ref)


def test_second_arc_config_is_exact():
    """64x64 over [4, 2] (16x32 pieces), ragged M and N, K tail of 8."""
    cfg = gemm_wg_configs("arc", "f16")[1].kwargs
    a, b, ref = _operands(80, 72, 40, np.float16, 5)
    c = gemm_wg(a, b, np.full((80, 72), np.nan, np.float32), target="cpu-arc", **cfg)
    np.testing.assert_array_equal(c, ref)


def test_rfc_2_1_split_copies_are_exact():
    """The 256x256 RFC 2.1 program: two K-loop copies, each storing its half of C^T
    (scattered per row) before the next runs; ragged in M, N and K."""
    a, b, ref = _operands(264, 280, 72, np.float16, 24)
    c = gemm_prefetch(a, b, np.full((264, 280), np.nan, np.float32), target="cpu-arc")
    np.testing.assert_array_equal(c, ref)
