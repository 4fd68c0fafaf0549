"""Property test: random valid types, attributes and ops print and parse back equal."""
from __future__ import annotations

from io import StringIO

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer

from xetile_dsl.dialects import make_context, parse_module, print_module
from xetile_dsl.dialects import xegpu as xg
from xetile_dsl.dialects import xetile as xt

POW2 = st.sampled_from([1, 2, 4, 8, 16, 32, 64])
ELEMS = st.sampled_from([Float16Type(), BFloat16Type(), Float32Type(), IntegerType(8), IntegerType(32)])


def _divisor(n: int):
    return st.sampled_from([d for d in (1, 2, 4, 8, 16, 32, 64) if n % d == 0])


@st.composite
def wg_maps(draw, shape):
    data = [draw(_divisor(s)) for s in shape]
    layout = [draw(st.sampled_from([1, 2, 4, 8])) for _ in shape]
    return xt.WgMapAttr(layout, data)


@st.composite
def tile_types(draw):
    shape = [draw(POW2), draw(POW2)]
    blocks = draw(st.one_of(st.just(()), st.tuples(_divisor(shape[0]), _divisor(shape[1]))))
    attr = xt.TileAttr(order=draw(st.sampled_from([(1, 0), (0, 1)])), inner_blocks=blocks,
                       wg_map=draw(st.one_of(st.none(), wg_maps(shape))), memory_space=draw(st.sampled_from([0, 3])),
                       scattered=draw(st.booleans()))
    return xt.TileType(shape, draw(ELEMS), attr)


@st.composite
def layouts(draw, shape):
    lane_layout = [1, draw(st.sampled_from([8, 16]))] if len(shape) == 2 else [draw(st.sampled_from([8, 16]))]
    lane_data = [1] * len(shape)
    inst = [max(lane_layout[i] * lane_data[i], 1) * draw(st.sampled_from([1, 2])) for i in range(len(shape))]
    sg_data = [i * draw(st.sampled_from([1, 2])) for i in inst]
    sg_layout = [draw(st.sampled_from([1, 2, 4])) for _ in shape]
    wg_shape = [a * b * draw(st.sampled_from([1, 2])) for a, b in zip(sg_layout, sg_data)]
    order = list(range(len(shape)))[::-1]
    return wg_shape, xg.LayoutAttr(sg_layout, sg_data, inst, lane_layout, lane_data, order)


@st.composite
def tdesc_types(draw):
    kind = draw(st.sampled_from(["block", "scatter", "layout", "sg_map"]))
    elem = draw(ELEMS)
    if kind == "scatter":
        bits = xg.element_bits(elem)
        chunks = [c for c in xg.CHUNK_SIZES if 16 * c * bits // 8 <= 512 and (c == 1 or bits >= 32 or c * bits % 32 == 0)]
        chunk = draw(st.sampled_from(chunks))
        shape = [16] if chunk == 1 else [16, chunk]
        return xg.TensorDescType(shape, elem, xg.ScatterTdescAttr(draw(st.sampled_from(["global", "slm"])), chunk))
    if kind == "layout":
        shape, layout = draw(layouts([0, 0]))
        return xg.TensorDescType(shape, elem, None, layout)
    shape = [draw(POW2), draw(st.sampled_from([16, 32]))]
    if kind == "sg_map":
        return xg.TensorDescType(shape, elem, None, xg.SGMapAttr([1, 16], [1, 1]))
    enc = xg.BlockTdescAttr(draw(st.sampled_from(["global", "slm"])), draw(st.sampled_from([1, 2])), draw(st.booleans()))
    return xg.TensorDescType(shape, elem, enc)


def _attr_roundtrip(attr) -> None:
    out = StringIO()
    Printer(stream=out).print_attribute(attr)
    back = Parser(make_context(), out.getvalue()).parse_attribute()
    assert back == attr, (out.getvalue(), back, attr)


@settings(max_examples=150, deadline=None)
@given(st.one_of(tile_types(), tdesc_types()))
def test_types_roundtrip(t) -> None:
    t.verify()
    _attr_roundtrip(t)


def _module(arg_types, build):
    block = Block(arg_types=arg_types)
    block.add_ops([*build(block.args), func.ReturnOp()])
    return ModuleOp([func.FuncOp("f", FunctionType.from_lists(arg_types, []), Region(block))])


def _check(module) -> None:
    module.verify()
    text = print_module(module)
    back = parse_module(text)
    back.verify()
    assert back.is_structurally_equivalent(module), text
    assert print_module(back) == text


@st.composite
def xetile_programs(draw):
    m, k, n = draw(POW2), draw(POW2), draw(POW2)
    elem = draw(st.sampled_from([Float16Type(), BFloat16Type()]))
    ta, tb = xt.TileType([m, k], elem), xt.TileType([k, n], elem)
    acc = VectorType(Float32Type(), [m, n])
    dim = draw(st.sampled_from([0, 1]))
    kind = draw(st.sampled_from(xt.FLOAT_REDUCE_KINDS))
    bm, bn = draw(_divisor(m)), draw(_divisor(n))
    with_c = draw(st.booleans())

    def build(args):
        src, i, j = args
        ia = xt.InitTileOp(src, [i, j], ta)
        ib = xt.InitTileOp(src, [i, j], tb)
        la = xt.LoadTileOp(ia.tile, VectorType(elem, [m, k]))
        lb = xt.LoadTileOp(ib.tile, VectorType(elem, [k, n]))
        mma = xt.TileMMAOp(la.value, lb.value, None, acc)
        mma2 = xt.TileMMAOp(la.value, lb.value, mma.output, acc) if with_c else mma
        red = xt.TileReduceOp(kind, mma2.output, [dim])
        tr = xt.TileTransposeOp(mma.output, [1, 0], VectorType(Float32Type(), [n, m]))
        pk = xt.TilePackOp(mma.output, [bm, bn])
        up = xt.TileUnpackOp(pk.result, [bm, bn])
        upd = xt.UpdateTileOffsetOp(ia.tile, i, j)
        pf = xt.PrefetchTileOp(ia.tile, draw(st.sampled_from([None, 0, 3])))
        ops = [ia, ib, la, lb, mma, red, tr, pk, up, upd, pf]
        if with_c:
            ops.insert(5, mma2)
        return ops

    return _module([MemRefType(elem, [256, 256]), IndexType(), IndexType()], build)


@st.composite
def xegpu_programs(draw):
    elem = draw(st.sampled_from([Float16Type(), BFloat16Type()]))
    m = draw(st.sampled_from([1, 2, 4, 8]))
    ta, tb = xg.TensorDescType([m, 16], elem), xg.TensorDescType([16, 16], elem)
    tc = xg.TensorDescType([m, 16], Float32Type())
    hints = draw(st.sampled_from([None, {"l1_hint": "cached"}, {"l1_hint": "uncached", "l3_hint": "streaming"}]))
    vnni = draw(st.booleans())

    def build(args):
        src, dst, i, j, p, offs, mask = args
        ca = xg.CreateNdTdescOp(src, [i, j], ta)
        cb = xg.CreateNdTdescOp(src, [i, j], tb)
        cc = xg.CreateNdTdescOp(dst, [i, j], tc)
        la = xg.LoadNdOp(ca.tensor_desc, VectorType(elem, [m, 16]), hints=hints)
        lb = xg.LoadNdOp(cb.tensor_desc, VectorType(elem, [8, 16, 2] if vnni else [16, 16]), packed=vnni)
        d = xg.DpasOp(la.value, lb.value, None, VectorType(Float32Type(), [m, 16]))
        s = xg.StoreNdOp(d.result, cc.tensor_desc, {"l1_hint": "write_back"})
        u = xg.UpdateNdOffsetOp(ca.tensor_desc, [i, j])
        sd = xg.TensorDescType([16], Float32Type(), xg.ScatterTdescAttr())
        ct = xg.CreateTdescOp(p, offs, sd)
        g = xg.LoadGatherOp(ct.tensor_desc, mask, VectorType(Float32Type(), [16]))
        sc = xg.StoreScatterOp(g.value, ct.tensor_desc, mask)
        f = xg.FenceOp(draw(st.sampled_from(["global", "slm"])), draw(st.sampled_from(["workgroup", "gpu"])))
        return [ca, cb, cc, la, lb, d, s, u, ct, g, sc, f]

    return _module([MemRefType(elem, [256, 256]), MemRefType(Float32Type(), [256, 256]), IndexType(), IndexType(), i64,
                    VectorType(IndexType(), [16]), VectorType(IntegerType(1), [16])], build)


@settings(max_examples=60, deadline=None)
@given(st.one_of(xetile_programs(), xegpu_programs()))
def test_ops_roundtrip(module) -> None:
    _check(module)
