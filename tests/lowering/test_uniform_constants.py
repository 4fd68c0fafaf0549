"""constants.is_uniform: a constant whose elements all have the same bytes is
decided without unpacking them, with the same answer as comparing every value (``==``:
0.0 equals -0.0, a NaN equals nothing)."""
from __future__ import annotations

import math

import pytest
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, IntegerType, VectorType

from xetile_dsl.lowering.rewrites.constants import is_uniform


def _by_value(values) -> bool:
    return all(v == values[0] for v in values[1:])


@pytest.mark.parametrize("values", [
    [0.0] * 64, [1.5] * 7, [0.0, -0.0, 0.0, 0.0], [math.nan] * 4, [math.nan], [2.0], [1.0, 1.0, 2.0, 1.0],
    [math.inf] * 3, [-0.0] * 5])
def test_floats_agree_with_comparing_every_value(values):
    attr = DenseIntOrFPElementsAttr.from_list(VectorType(Float32Type(), [len(values)]), values)
    assert is_uniform(attr) == _by_value(list(attr.get_values()))


@pytest.mark.parametrize("bits, values", [(32, [0] * 256), (32, [3, 3, 4]), (1, [1, 1, 1, 1]), (1, [1, 0]),
                                          (8, [-1] * 9), (64, [5])])
def test_integers_agree_with_comparing_every_value(bits, values):
    attr = DenseIntOrFPElementsAttr.from_list(VectorType(IntegerType(bits), [len(values)]), values)
    assert is_uniform(attr) == _by_value(list(attr.get_values()))
