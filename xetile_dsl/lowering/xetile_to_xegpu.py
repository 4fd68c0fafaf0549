"""Pass ``convert-xetile-to-xegpu``: blocked XeTile -> subgroup-level XeGPU.

Every blocked value becomes one XeGPU value per block (row-major over the block grid): a
tile becomes a grid of tensor descriptors, a 4-D vector a grid of 2-D vectors.  tile_mma
becomes one xegpu.dpas per (row block, column block, K block); operand B is loaded with
``packed`` (VNNI), giving the RFC's 3-D ``KxNx2`` form.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerAttr, ModuleOp, VectorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ..dialects import xegpu, xetile
from ..errors import LoweringError
from ..frontend.types import bit_width
from . import elementwise

INDEX = IndexType()


@dataclass(frozen=True)
class ConvertXeTileToXeGPU(ModulePass):
    name = "convert-xetile-to-xegpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp):
                _Translator(fn).run()


class _Translator:
    """Rebuilds one function, mapping each old value to a list of new values."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.vmap: dict[SSAValue, list[SSAValue]] = {}
        self.block: Block | None = None
        self.packed_tiles = _tiles_loaded_as_b(fn)

    def run(self) -> None:
        old = self.fn.body.block
        new = Block(arg_types=[a.type for a in old.args])
        for o, n in zip(old.args, new.args):
            n.name_hint = o.name_hint
            self.vmap[o] = [n]
        self._translate_block(old, new)
        self.fn.body.detach_block(old)
        self.fn.body.add_block(new)

    def _translate_block(self, old: Block, new: Block) -> None:
        saved, self.block = self.block, new
        for op in old.ops:
            self._translate(op)
        self.block = saved

    def emit(self, op: Operation, like: Operation) -> Operation:
        op.location = like.location
        self.block.add_op(op)
        return op

    def one(self, v: SSAValue) -> SSAValue:
        return self.vmap[v][0]

    def const_index(self, value: int, like: Operation) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(value, INDEX)), like).result

    def add(self, base: SSAValue, delta: int, like: Operation) -> SSAValue:
        if delta == 0:
            return base
        return self.emit(arith.AddiOp(base, self.const_index(delta, like)), like).result

    # --- dispatch ----------------------------------------------------------------
    def _translate(self, op: Operation) -> None:
        handler = getattr(self, f"_op_{type(op).__name__}", None)
        if handler is not None:
            handler(op)
        elif elementwise.translate(self, op):
            pass
        elif op.dialect_name() == "xetile":
            raise LoweringError(f"{op.name} is not supported by the XeGPU lowering yet", op)
        else:
            clone = op.clone(value_mapper={v: self.one(v) for v in op.operands})
            self.block.add_op(clone)
            for o, n in zip(op.results, clone.results):
                self.vmap[o] = [n]

    def _op_ConstantOp(self, op: arith.ConstantOp) -> None:
        t = op.result.type
        if not (isinstance(t, VectorType) and len(t.get_shape()) == 4):
            self._clone(op)
            return
        gr, gc, b0, b1 = t.get_shape()
        splat = op.value.get_values()[0]
        btype = VectorType(t.element_type, [b0, b1])
        vals = [self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(btype, [splat])), op).result
                for _ in range(gr * gc)]
        self.vmap[op.result] = vals

    def _clone(self, op: Operation) -> None:
        clone = op.clone(value_mapper={v: self.one(v) for v in op.operands})
        self.block.add_op(clone)
        for o, n in zip(op.results, clone.results):
            self.vmap[o] = [n]

    def _op_InitTileOp(self, op: xetile.InitTileOp) -> None:
        t = op.tile.type
        (rows, cols), (b0, b1) = t.get_shape(), t.attr.blocks
        src = self.one(op.source)
        sizes = [self.one(v) for v in op.sizes]
        strides = [self.one(v) for v in op.strides]
        o0, o1 = (self.one(v) for v in op.offsets)
        tdesc_type = xegpu.TensorDescType([b0, b1], t.element_type)
        descs = []
        for i in range(rows // b0):
            for j in range(cols // b1):
                offs = [self.add(o0, i * b0, op), self.add(o1, j * b1, op)]
                descs.append(self.emit(xegpu.CreateNdTdescOp(src, offs, tdesc_type, sizes, strides), op).tensor_desc)
        self.vmap[op.tile] = descs

    def _op_LoadTileOp(self, op: xetile.LoadTileOp) -> None:
        if op.padding is not None:
            raise LoweringError("load_tile with a non-zero padding value is not supported by the XeGPU lowering "
                                "yet (2D block loads fill out-of-bounds elements with 0)", op)
        t = op.tile.type
        b0, b1 = t.attr.blocks
        packed = op.tile in self.packed_tiles
        elem = t.element_type
        if packed:
            vnni = 32 // bit_width(elem)
            vtype = VectorType(elem, [b0 // vnni, b1, vnni])
        else:
            vtype = VectorType(elem, [b0, b1])
        self.vmap[op.value] = [self.emit(xegpu.LoadNdOp(d, vtype, packed=packed), op).value
                               for d in self.vmap[op.tile]]

    def _op_StoreTileOp(self, op: xetile.StoreTileOp) -> None:
        for v, d in zip(self.vmap[op.value], self.vmap[op.tile], strict=True):
            self.emit(xegpu.StoreNdOp(v, d), op)

    def _op_PrefetchTileOp(self, op: xetile.PrefetchTileOp) -> None:
        for d in self.vmap[op.tile]:
            self.emit(xegpu.PrefetchNdOp(d, {"l1_hint": "cached", "l3_hint": "cached"}), op)

    def _op_UpdateTileOffsetOp(self, op: xetile.UpdateTileOffsetOp) -> None:
        dx, dy = self.one(op.offset_x), self.one(op.offset_y)
        self.vmap[op.result] = [self.emit(xegpu.UpdateNdOffsetOp(d, [dx, dy]), op).result
                                for d in self.vmap[op.tile]]

    def _op_TileMMAOp(self, op: xetile.TileMMAOp) -> None:
        mb, kb, _, _ = op.a.type.get_shape()
        _, nb, _, _ = op.b.type.get_shape()
        a, b = self.vmap[op.a], self.vmap[op.b]
        c = self.vmap[op.c] if op.c is not None else None
        out_t = op.output.type
        rtype = VectorType(out_t.element_type, out_t.get_shape()[2:])
        results = []
        for i in range(mb):
            for j in range(nb):
                acc = c[i * nb + j] if c is not None else None
                for k in range(kb):
                    acc = self.emit(xegpu.DpasOp(a[i * kb + k], b[k * nb + j], acc, rtype), op).result
                results.append(acc)
        self.vmap[op.output] = results

    def _op_ForOp(self, op: scf.ForOp) -> None:
        inits = [v for x in op.iter_args for v in self.vmap[x]]
        old_body = op.body.block
        body = Block(arg_types=[INDEX] + [v.type for v in inits])
        self.vmap[old_body.args[0]] = [body.args[0]]
        body.args[0].name_hint = old_body.args[0].name_hint
        pos = 1
        for old_arg, init in zip(old_body.args[1:], op.iter_args):
            n = len(self.vmap[init])
            self.vmap[old_arg] = list(body.args[pos:pos + n])
            for a in self.vmap[old_arg]:
                a.name_hint = old_arg.name_hint
            pos += n
        self._translate_block(old_body, body)
        loop = self.emit(scf.ForOp(self.one(op.lb), self.one(op.ub), self.one(op.step), inits, Region(body)), op)
        pos = 0
        for old_res, init in zip(op.results, op.iter_args):
            n = len(self.vmap[init])
            self.vmap[old_res] = list(loop.results[pos:pos + n])
            pos += n

    def _op_YieldOp(self, op: scf.YieldOp) -> None:
        self.emit(scf.YieldOp(*[v for x in op.operands for v in self.vmap[x]]), op)


def _tiles_loaded_as_b(fn: func.FuncOp) -> set[SSAValue]:
    """Tiles whose loads feed operand B of tile_mma (loaded with VNNI packing)."""
    found = set()
    for op in fn.walk():
        if isinstance(op, xetile.TileMMAOp) and isinstance(op.b.owner, xetile.LoadTileOp):
            found.add(op.b.owner.tile)
    return found
