"""The compile-time shortcuts keep the IR they replace: the ops a lowering
builds by the dozen use Operation's constructor instead of xDSL's generic builder, and
must come out as the generic builder (``IRDLOperation.build``) makes them; the
rebuilders make index arithmetic by ``create`` with the properties the constructor
gives; ``dialects.walk.ops_in`` lists what xDSL's ``walk()`` yields, in its order."""
from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, MemRefType, VectorType, f16, f32
from xdsl.ir import Block

from xetile_dsl.dialects import parse_module, xegpu, xetile
from xetile_dsl.dialects._vector_ops import ExtractStridedSliceOp, ShapeCastOp
from xetile_dsl.dialects.walk import ops_in
from xetile_dsl.lowering.rewrites import rebuild
from tests.ir.helpers import wrap

INDEX = IndexType()


def _same_op(fast, generic) -> None:
    assert type(fast) is type(generic)
    assert fast.operands == generic.operands
    assert fast.result_types == generic.result_types
    assert fast.properties == generic.properties and list(fast.properties) == list(generic.properties)
    assert fast.attributes == generic.attributes
    fast.verify()


@pytest.fixture
def values():
    """Block arguments: a dynamic f16 memref, six index values, DPAS operands."""
    return Block(arg_types=[MemRefType(f16, [-1, -1]), *[INDEX] * 6, VectorType(f16, [8, 16]),
                            VectorType(f16, [8, 16, 2]), VectorType(f32, [8, 16]), VectorType(f32, [16, 16])]).args


def test_descriptor_and_tile_constructors_match_the_generic_builder(values):
    src, o0, o1, h, w, s, c1 = values[:7]
    td = xegpu.TensorDescType([8, 16], f16)
    _same_op(xegpu.CreateNdTdescOp(src, [o0, o1], td, [h, w], [s, c1]),
             xegpu.CreateNdTdescOp.build(operands=[src, [o0, o1], [h, w], [s, c1]], result_types=[td]))
    tile = xetile.TileType([8, 16], f16)
    _same_op(xetile.InitTileOp(src, [o0, o1], tile, [h, w], [s, c1]),
             xetile.InitTileOp.build(operands=[src, [o0, o1], [h, w], [s, c1]], result_types=[tile]))
    static = Block(arg_types=[MemRefType(f16, [32, 32])]).args[0]
    _same_op(xetile.InitTileOp(static, [o0, o1], tile),
             xetile.InitTileOp.build(operands=[static, [o0, o1], [], []], result_types=[tile]))


def test_dpas_and_vector_constructors_match_the_generic_builder(values):
    a, b, acc, wide = values[7:]
    result = VectorType(f32, [8, 16])
    _same_op(xegpu.DpasOp(a, b, acc, result), xegpu.DpasOp.build(operands=[a, b, [acc]], result_types=[result]))
    _same_op(xegpu.DpasOp(a, b, None, result), xegpu.DpasOp.build(operands=[a, b, []], result_types=[result]))
    flat = VectorType(f32, [128])
    _same_op(ShapeCastOp(acc, flat), ShapeCastOp.build(operands=[acc], result_types=[flat]))
    generic = ExtractStridedSliceOp.build(operands=[wide], result_types=[result],
                                          properties={name: getattr(ExtractStridedSliceOp(wide, [8, 0], [8, 16]), name)
                                                      for name in ("offsets", "sizes", "strides")})
    _same_op(ExtractStridedSliceOp(wide, [8, 0], [8, 16]), generic)


@pytest.mark.parametrize("op_type", [arith.AddiOp, arith.MuliOp, arith.RemSIOp, arith.DivSIOp])
def test_rebuilder_arithmetic_has_the_constructors_properties(values, op_type):
    x, y = values[1:3]
    assert rebuild._binary_properties(op_type) == op_type(x, y).properties


def test_ops_in_lists_what_walk_yields():
    module = parse_module(wrap("%n: index, %f: i1", """
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    %v = scf.if %f -> (index) {
      %a = arith.addi %acc, %i : index
      scf.yield %a : index
    } else {
      scf.yield %acc : index
    }
    scf.yield %v : index
  }"""))
    assert ops_in(module) == list(module.walk())
    fn = next(iter(module.ops))
    assert ops_in(fn.body) == list(fn.body.walk())
    assert ops_in(fn.body.block) == list(fn.body.block.walk())
    assert len(ops_in(module)) == 11
