"""tf32 GEMM tiles with 1 to 4 rows of A (PVC flavour): a tf32 row of A is 8 dwords, half of
a 16-lane register, so an M-row block gives each lane M / 2 elements. 4 rows run the 4-row
DPAS; 1, 2 and 3 rows are refused at the kernel's load of A, naming the legal row counts
(they were an internal error in xegpu-simt and a bare ValueError)."""
from __future__ import annotations

import numpy as np
import pytest

from tf32_ref import tf32_matmul_ref
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels.matmul import matmul


def _operands(bm):
    rng = np.random.default_rng(bm)
    a = rng.standard_normal((2 * bm, 64)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(np.float32)
    return a, b


def test_four_rows_run_the_4_row_dpas():
    a, b = _operands(4)
    c = matmul(a, b, BM=4, BN=16, BK=16, target="cpu")
    ref, f32_error = tf32_matmul_ref(a, b)
    np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error)


@pytest.mark.parametrize("bm", [1, 2, 3])
def test_fewer_rows_are_a_located_refusal(bm):
    a, b = _operands(bm)
    with pytest.raises(CompilationError) as info:
        matmul(a, b, BM=bm, BN=16, BK=16, target="cpu")
    msg = str(info.value)
    assert "kernels/matmul.py:" in msg and "internal" not in msg
    assert f"tile {bm}x16xf32 cannot be used as operand A" in msg and "have 4 rows" in msg
