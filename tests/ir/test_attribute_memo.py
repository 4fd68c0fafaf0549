"""Attributes the lowering builds again and again (strided-slice offsets/sizes/strides and
block vector types) are built once per value and shared; xDSL attributes are
immutable, so a shared one prints and compares as a new one would."""
from __future__ import annotations

import dataclasses

import pytest
from xdsl.dialects.builtin import DenseArrayBase, VectorType, f16, f32, i64
from xdsl.ir import Block, ParametrizedAttribute

from xetile_dsl.dialects import _asm, xegpu, xetile
from xetile_dsl.dialects._vector_ops import ExtractStridedSliceOp


def test_int_arrays_and_vector_types_are_built_once_per_value():
    a = _asm.int_array([8, 0])
    assert _asm.int_array((8, 0)) is a
    assert a == DenseArrayBase.from_list(i64, [8, 0]) and _asm.int_array([0, 8]) != a
    v = _asm.vector_type(f16, [16, 16])
    assert _asm.vector_type(f16, (16, 16)) is v
    assert v == VectorType(f16, [16, 16]) and _asm.vector_type(f32, [16, 16]) != v


def test_a_strided_slice_shares_them_and_prints_the_same():
    block = Block(arg_types=[VectorType(f32, [16, 16])])
    first = ExtractStridedSliceOp(block.args[0], [8, 0], [8, 16])
    second = ExtractStridedSliceOp(block.args[0], [8, 0], [8, 16])
    assert first.result.type is second.result.type == VectorType(f32, [8, 16])
    assert first.properties["sizes"] is second.properties["sizes"]
    assert first.properties["strides"] == DenseArrayBase.from_list(i64, [1, 1])
    first.verify()


def test_a_full_table_starts_again(monkeypatch):
    monkeypatch.setattr(_asm, "_KEEP", 2)
    monkeypatch.setattr(_asm, "_INT_ARRAYS", {})
    kept = [_asm.int_array([n]) for n in range(5)]
    assert len(_asm._INT_ARRAYS) <= 2
    assert [list(k.get_values()) for k in kept] == [[n] for n in range(5)]


def _attribute_classes():
    """Every parametrized attribute and type class our dialects define (aliases, which
    only parse into another attribute, aside)."""
    seen = {}
    for module in (xegpu, xetile):
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, ParametrizedAttribute) and dataclasses.is_dataclass(obj) \
                    and obj.__module__.startswith("xetile_dsl.") and "Alias" not in obj.__name__:
                seen[obj.__name__] = obj
    return sorted(seen.values(), key=lambda cls: cls.__name__)


@pytest.mark.parametrize("cls", _attribute_classes(), ids=lambda cls: cls.__name__)
def test_every_parameter_is_part_of_equality_and_hash(cls):
    """Equality and hash (the dataclass ones xDSL derives per class) cover every
    parameter: a parameter declared on a base that is not a dataclass was left out, so
    an slm encoding equalled its global twin (and a cache keyed on descriptor types gave
    an slm scatter the global descriptor), and every cache hint equalled every other."""
    parameters = [name for name, _ in cls.get_irdl_definition().parameters]
    compared = [f.name for f in dataclasses.fields(cls) if f.compare]
    assert compared == parameters


def test_descriptors_of_two_memory_spaces_differ_and_keep_them_through_with_sg_map():
    lanes = xegpu.SGMapAttr((1, 16), (1, 1))
    slm, glob = (xegpu.TensorDescType([16], f16, xegpu.ScatterTdescAttr(space)) for space in ("slm", "global"))
    assert slm != glob and xegpu.BlockTdescAttr("slm") != xegpu.BlockTdescAttr("global")
    assert xegpu.CacheHintAttr("cached") != xegpu.CacheHintAttr("uncached")
    assert glob.with_sg_map(lanes).memory_space == "global"
    assert slm.with_sg_map(lanes).memory_space == "slm"          # after the global one was made
