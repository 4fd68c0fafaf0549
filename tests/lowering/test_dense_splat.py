"""``constants.dense`` decides a splat from the raw values when they all compare equal
(converting each element of a zero accumulator was most of its time); the
attribute must be the one the element-by-element rule gives (Python ``==`` on the
converted values: -0.0 equals 0.0, a NaN equals nothing)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType, f32, i1, i32

from xetile_dsl.lowering.rewrites.constants import dense


def _by_element(t, arr):
    flat = [float(v) if isinstance(v, float) else int(v) for v in np.asarray(arr, dtype=object).reshape(-1)]
    if all(v == flat[0] for v in flat[1:]):
        return DenseIntOrFPElementsAttr.from_list(t, [flat[0]])
    return DenseIntOrFPElementsAttr.from_list(t, flat)


CASES = [
    (VectorType(f32, [64, 64]), np.zeros((64, 64))),
    (VectorType(f32, [2, 2]), np.array([[-0.0, 0.0], [0.0, 0.0]])),
    (VectorType(f32, [2, 2]), np.array([[0.0, -0.0], [-0.0, -0.0]])),
    (VectorType(f32, [2, 2]), np.full((2, 2), math.nan)),
    (VectorType(f32, [1, 4]), np.array([[1.5, 1.5, 1.5, 2.5]])),
    (VectorType(i32, [8, 16]), np.full((8, 16), 7, dtype=np.int64)),
    (VectorType(i32, [1, 3]), np.arange(3).reshape(1, 3)),
    (VectorType(i1, [1, 4]), np.ones((1, 4), dtype=bool)),
    (VectorType(f32, [1, 1]), np.array([[3.0]])),
]


@pytest.mark.parametrize("t, arr", CASES)
def test_dense_is_the_element_by_element_attribute(t, arr):
    got, want = dense(t, arr), _by_element(t, arr)
    assert str(got) == str(want)
    assert got.data.data == want.data.data and len(got) == len(want)
