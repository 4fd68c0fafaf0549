"""Element reads and writes (``memref.load`` / ``memref.store``, what ``x[i, j]`` builds)
in the interpreter: strided arrays are addressed through their row pitch, the frontend's
guard gives 0 outside the array and drops writes there, and an unguarded access outside
the array is an InterpreterError (the guard, not the op, defines the language's rule)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.interpreter import InterpreterError

from .mlir import kernel, memref, run


def _copy_element(i: int, j: int) -> str:
    """y[0, 0] = x[i, j] with no guard."""
    return kernel({"x": "f32", "y": "f32"}, f"""
  %i = arith.constant {i} : index
  %j = arith.constant {j} : index
  %v = memref.load %x[%i, %j] : {memref("f32")}
  memref.store %v, %y[%c0, %c0] : {memref("f32")}""")


def test_element_of_a_strided_view_is_read_through_its_row_pitch():
    big = np.arange(6 * 10, dtype=np.float32).reshape(6, 10)
    y = np.zeros((1, 1), np.float32)
    run(_copy_element(4, 2), (1,), big[:, 3:7], y)
    assert y[0, 0] == big[4, 5]


def test_an_unguarded_element_outside_the_array_is_an_error():
    with pytest.raises(InterpreterError, match="out of bounds"):
        run(_copy_element(6, 0), (1,), np.zeros((6, 4), np.float32), np.zeros((1, 1), np.float32))


@xd.jit
def shifted_copy(x, y, n):
    """y[i, j] = x[i + n, j - n] over y's extent: reads outside x give 0;
    writes outside y (the last line) are dropped."""
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            y[i, j] = x[i + n, j - n]
    y[y.shape[0] + n * n, 0] = 99.0


@pytest.mark.parametrize("n", [0, 2, -3])
def test_reads_outside_give_zero_and_writes_outside_are_dropped(n):
    x = np.arange(1, 5 * 7 + 1, dtype=np.float32).reshape(5, 7)
    y = np.full((5, 7), np.nan, np.float32)
    shifted_copy.on("interpret")[(1,)](x, y, n)
    want = np.zeros_like(y)
    for i in range(5):
        for j in range(7):
            if 0 <= i + n < 5 and 0 <= j - n < 7:
                want[i, j] = x[i + n, j - n]
    np.testing.assert_array_equal(y, want)
