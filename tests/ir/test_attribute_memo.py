"""Attributes the lowering builds again and again (strided-slice offsets/sizes/strides and
block vector types) are built once per value and shared (issue 13); xDSL attributes are
immutable, so a shared one prints and compares as a new one would."""
from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, VectorType, f16, f32, i64
from xdsl.ir import Block

from xetile_dsl.dialects import _asm
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
