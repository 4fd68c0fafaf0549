"""Workgroup GEMMs whose accumulator per subgroup exceeds the register budget, run on the
CPU device against numpy (small-integer f16, exact; C prefilled with NaN so a block no
loop copy stores shows) and the interpreter: xegpu-split-accumulators runs their K loop
in several copies (tests/isa measures the spills it removes); a loop that writes memory
is left whole and keeps its warning."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.split_kernels import gemm_copying_a_kernel, wg_tiles
from xetile_dsl.errors import AccumulatorSplitWarning, CompilationWarning
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel


def _operands(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _gemm_wg(a, b, target, rows, cols):
    tiles = wg_tiles(rows, cols)
    c = np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
    grid = (a.shape[0] // tiles["BM"], b.shape[1] // tiles["BN"])
    gemm_wg_kernel.on(target)[grid](a, b, c, a.shape[1], **tiles)
    return c


@pytest.mark.parametrize("target, rows, cols, passes", [
    ("cpu-pvc", 64, 64, 2), ("cpu-arc", 16, 64, 2), ("cpu-arc", 32, 64, 2),
])
def test_split_gemm_matches_numpy(target, rows, cols, passes):
    """ARC computes these as C^T (lowering/passes/wg_to_sg/operand_swap.py): a 32x64 piece is a 64x32 C^T
    whose halves fit the budget with their operands (2 passes; 4 of 8x64 rows before)."""
    a, b, ref = _operands(rows * 4 * 2, cols * 4, 160, rows + cols)
    with pytest.warns(AccumulatorSplitWarning, match=f"runs in {passes} passes"):
        c = _gemm_wg(a, b, target, rows, cols)
    np.testing.assert_array_equal(c, ref)


def test_split_gemm_agrees_with_the_interpreter():
    a, b, ref = _operands(256, 256, 96, 7)
    with warnings.catch_warnings():  # the note (also repeated by a kernel from the cache)
        warnings.simplefilter("ignore", AccumulatorSplitWarning)
        compiled = _gemm_wg(a, b, "cpu-pvc", 64, 64)
    interpreted = _gemm_wg(a, b, "interpret", 64, 64)
    np.testing.assert_array_equal(interpreted, ref)
    np.testing.assert_array_equal(compiled, interpreted)


def test_loop_that_writes_memory_is_not_split():
    """The K loop also copies A to ``o``: one loop, the "will spill" warning, right results."""
    a, b, ref = _operands(256, 512, 128, 8)
    c = np.full((256, 512), np.nan, np.float32)
    o = np.zeros_like(a)
    with pytest.warns(CompilationWarning, match="will spill registers on pvc") as record:
        gemm_copying_a_kernel.on("cpu-pvc")[(1, 2)](a, b, c, o, 128, BM=256, BN=256, BK=32)
    assert not any(issubclass(w.category, AccumulatorSplitWarning) for w in record)
    np.testing.assert_array_equal(c, ref)
    np.testing.assert_array_equal(o, a)
