"""A tile_mma consuming another tile_mma's result (back-to-back GEMM, the attention
pattern): exact on the PVC flavour; on ARC the 8x8 result blocks cannot be operand
blocks yet, which is a located error naming the way around (through SLM), and that way
is exact on the ARC flavour."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError

BM, BN, BK = 16, 32, 32


@xd.jit
def chained_kernel(a, b, d, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    s = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    o = xt.tile_mma(xt.astype(s, xt.float16), xt.load_tile(xt.init_tile(d, [0, 0], [BN, BK])))
    xt.store_tile(o, xt.init_tile(c, [0, 0], [BM, BK]))


@xd.jit
def chained_through_slm_kernel(a, b, d, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    s = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    buf = xt.slm_alloc([BM, BN], xt.float16)
    xt.store_tile(xt.astype(s, xt.float16), xt.init_tile(buf, [0, 0], [BM, BN]))
    xt.barrier()
    o = xt.tile_mma(xt.load_tile(xt.init_tile(buf, [0, 0], [BM, BN])), xt.load_tile(xt.init_tile(d, [0, 0], [BN, BK])))
    xt.store_tile(o, xt.init_tile(c, [0, 0], [BM, BK]))


def _operands():
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (BM, BK)).astype(np.float16)
    b = rng.integers(-2, 3, (BK, BN)).astype(np.float16)
    d = rng.integers(-2, 3, (BN, BK)).astype(np.float16)
    # small integers: the first product (|s| <= 4 * BK = 128) is exact in f16, so the
    # chained result is exact in f32 and equality is the reference
    return a, b, d, (a.astype(np.float32) @ b.astype(np.float32)) @ d.astype(np.float32)


@pytest.mark.parametrize("kernel,flavour", [(chained_kernel, "cpu-pvc"), (chained_through_slm_kernel, "cpu-arc"),
                                            (chained_kernel, "interpret")])
def test_chained_tile_mma_is_exact(kernel, flavour):
    a, b, d, ref = _operands()
    c = np.zeros((BM, BK), np.float32)
    kernel.on(flavour)[(1,)](a, b, d, c, BM=BM, BN=BN, BK=BK)
    np.testing.assert_array_equal(c, ref)


def test_chained_tile_mma_on_arc_is_a_located_error():
    a, b, d, _ = _operands()
    with pytest.raises(CompilationError, match=r"feeds another tile_mma as an operand: on arc .*xt\.slm_alloc") as err:
        chained_kernel.on("cpu-arc")[(1,)](a, b, d, np.zeros((BM, BK), np.float32), BM=BM, BN=BN, BK=BK)
    assert "test_chained_mma.py:19" in str(err.value)   # the first tile_mma's line
    assert "internal compiler error" not in str(err.value)
