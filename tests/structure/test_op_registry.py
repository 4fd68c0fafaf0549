"""The op registry every stage registers its ops with (xetile_dsl/op_registry.py)."""
from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, f32

from xetile_dsl.op_registry import OpRegistry


def test_register_and_look_up_by_class_instance_and_name():
    reg = OpRegistry("test")

    @reg.register(arith.AddfOp, arith.MulfOp)
    def both(op):
        return "float"

    @reg.register("zeros")
    def zeros(node):
        return "zeros"

    one = arith.ConstantOp(FloatAttr(1.0, f32))
    op = arith.AddfOp(one, one)
    assert reg.lookup(op) is both
    assert reg.lookup(arith.MulfOp) is both
    assert reg.lookup("zeros") is zeros
    assert reg.lookup(arith.SubfOp) is None and "ones" not in reg
    assert sorted(reg.names()) == ["arith.addf", "arith.mulf", "zeros"]


def test_a_base_class_handler_serves_subclasses():
    reg = OpRegistry("test")

    class Base:
        pass

    class Child(Base):
        pass

    reg.register(Base)(lambda op: "base")
    assert reg.lookup(Child()) is reg.lookup(Base)


def test_registering_a_key_twice_is_refused():
    reg = OpRegistry("codegen")
    reg.register(arith.AddfOp)(lambda op: 1)
    with pytest.raises(ValueError, match="codegen: arith.addf is already handled"):
        reg.register(arith.AddfOp)(lambda op: 2)
    with pytest.raises(TypeError):
        reg.register(3)(lambda op: 3)
    with pytest.raises(TypeError):
        reg.register()
