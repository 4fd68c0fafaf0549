"""The one-row view of a 1-D memref (tiles of 1-D arrays): ``xetile.init_tile`` and
``xegpu.create_nd_tdesc`` of a ``memref<?xT>`` with two offsets and the ``[1, n]`` shape
and strides round-trip; without the shape operands, or with one offset, they do not
verify (docs/decisions/025-one-dimensional-values.md)."""
from __future__ import annotations

import pytest
from xdsl.utils.exceptions import VerifyException

from xetile_dsl.dialects import parse_module

from .helpers import roundtrip, wrap

ARGS = "%x: memref<?xf32>, %i: index, %n: index, %p: index, %one: index"


@pytest.mark.parametrize("body", [
    "%t = xetile.init_tile %x[%i, %i], [%one, %n], [%p, %one] : memref<?xf32> -> !xetile.tile<1x256xf32>",
    "%d = xegpu.create_nd_tdesc %x[%i, %i], [%one, %n], [%p, %one] : memref<?xf32> -> "
    "!xegpu.tensor_desc<1x16xf32>",
])
def test_one_row_view_round_trips(body):
    roundtrip(wrap(ARGS, body))


@pytest.mark.parametrize("body, message", [
    ("%d = xegpu.create_nd_tdesc %x[%i, %i] : memref<?xf32> -> !xegpu.tensor_desc<1x16xf32>",
     "a dynamic memref needs its shape and strides as operands"),
    ("%d = xegpu.create_nd_tdesc %x[%i], [%one, %n], [%p, %one] : memref<?xf32> -> !xegpu.tensor_desc<1x16xf32>",
     "needs at least 2 offsets"),
])
def test_one_row_view_needs_its_shape(body, message):
    with pytest.raises(VerifyException, match=message):
        parse_module(wrap(ARGS, body)).verify()
