"""xetile_dsl/dtypes.py, the one element-type table, against independent references:
numpy's dtypes (ml_dtypes for bf16), xDSL's types and the language's dtype objects."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerType, Signedness

import xetile_dsl.language as xt
from xetile_dsl import dtypes
from xetile_dsl.dialects.types import bit_width, ir_type, is_float, is_unsigned, type_name
from xetile_dsl.runtime.abi import ELEMENT_TYPES as ABI_TYPES

NUMPY_KIND = {"float": "f", "int": "i", "uint": "u"}


@pytest.mark.parametrize("name", sorted(dtypes.ARRAY_TYPES))
def test_array_types_match_numpy(name):
    info = dtypes.element(name)
    held = dtypes.numpy_dtype(name)
    assert held.itemsize * 8 == info.bits
    if name == "bf16":
        assert held == np.dtype(ml_dtypes.bfloat16)
    elif name in dtypes.FP8_TYPES:
        assert held == np.dtype(getattr(ml_dtypes, info.numpy_name)) and dtypes.numpy_kind(held) == "f"
    else:
        assert held.kind == NUMPY_KIND[info.kind] and held.name == info.numpy_name
    assert dtypes.OF_NUMPY_NAME[held.name] is info
    assert ABI_TYPES[name] == (held.name, held.itemsize)


@pytest.mark.parametrize("name", sorted(dtypes.ELEMENT_TYPES))
def test_ir_types_match_the_table(name):
    info = dtypes.element(name)
    ir = ir_type(name)
    if isinstance(ir, IntegerType):
        assert ir.width.data == info.bits
        assert (ir.signedness.data == Signedness.UNSIGNED) == info.is_unsigned
    # fp8 is a float the IR never computes with: dialects.types.is_float (arithmetic) says no
    assert is_float(ir) == (info.is_float and name not in dtypes.FP8_TYPES)
    assert is_unsigned(ir) == info.is_unsigned
    assert bit_width(ir) == info.bits
    assert type_name(ir) == ("f32" if name == "tf32" else name)


def test_language_dtypes_are_the_table():
    found = {v.name: v for v in vars(xt).values() if isinstance(v, xt.dtype)}
    assert set(found) <= set(dtypes.ELEMENT_TYPES)
    for name, value in found.items():
        info = dtypes.element(name)
        assert repr(value) == f"xt.{info.language_name}"
        assert getattr(xt, info.language_name) is value
        assert value.bits == info.bits and value.is_float == info.is_float


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(KeyError, match="known: f16"):
        dtypes.element("f8")
    with pytest.raises(KeyError, match="no array holds"):
        dtypes.numpy_dtype("tf32")
