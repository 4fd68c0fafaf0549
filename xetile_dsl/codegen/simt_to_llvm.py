"""Codegen: per-lane (SIMT) XeGPU IR -> LLVM IR (llvmlite) for the SPIR-V backend.

One kernel function per func.func, ``spir_kernel`` with the subgroup size pinned.
Array parameters follow :mod:`xetile_dsl.runtime.abi` (pointer, extents, outer strides).
GPU-only operations go through :class:`~.intel_builtins.IntelBuiltins`, which declares
them for a GPU or defines them from their specifications for the CPU device; this module
never knows which.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from llvmlite import ir
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import BlockArgument, Operation, SSAValue

from ..dialects import xegpu
from ..dialects.walk import ops_in
from ..errors import LoweringError
from ..dialects.types import bit_width, type_name
from ..lowering.analysis import load_rotation
from ..lowering.rewrites.transposed_tiles import LANE_ROWS_ATTR
from ..lowering.analysis.families import Families
from ..runtime.abi import ArrayParam, KernelABI, ScalarParam
from ..targets import Target
from ..targets.slm_budget import SlmBudget
from ..targets.target import MMA_INPUT_ALIASES
from . import (a_from_c, constants, coordinates, lane_transpose, latch_order, message_pieces, nbarrier,
               prefetch_payloads, scattered_ops, slm, transposed_payloads, vector_ops)
from .builtins_transpose import transpose_kind
from .control_flow import ControlFlow
from .intel_builtins import IntelBuiltins
from .llvm_types import llvm_scalar, llvm_type
from .scalar_ops import ScalarOps
from .spirv_backend import SPIRV_DATALAYOUT, SPIRV_TRIPLE
from .tdesc import TDesc

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
GLOBAL_PTR = ir.PointerType(addrspace=1)


def generate(module: ModuleOp, target: Target, emulate: bool,
             per_lane_arrays: frozenset[str] = frozenset()) -> tuple[str, KernelABI]:
    """LLVM IR text for the one kernel in ``module`` and its launch ABI.

    ``per_lane_arrays`` names the array parameters whose rows are narrower than 2D block
    messages allow (known at launch): their tiles are read and written with per-lane
    loads and stores instead (design.md, "Narrow rows")."""
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(kernels) != 1:
        raise LoweringError(f"codegen expects one kernel per module, got {len(kernels)}")
    llmod = ir.Module(name=kernels[0].sym_name.data)
    llmod.triple, llmod.data_layout = SPIRV_TRIPLE, SPIRV_DATALAYOUT
    gen = _KernelGen(llmod, target, IntelBuiltins(llmod, target, emulate), per_lane_arrays)
    abi = gen.kernel(kernels[0])
    return str(llmod), abi


class _KernelGen:
    def __init__(self, llmod: ir.Module, target: Target, lib: IntelBuiltins, per_lane_arrays=frozenset()):
        self.llmod, self.target, self.lib = llmod, target, lib
        self.per_lane_arrays = frozenset(per_lane_arrays)
        self.values: dict[SSAValue, object] = {}
        self.b: ir.IRBuilder | None = None
        self.memrefs: dict[SSAValue, tuple[ir.Value, list[ir.Value], list[ir.Value]]] = {}
        self.slm = SlmBudget(target)  # the module-scope SLM buffers (codegen/slm.py)
        self.scalars = ScalarOps(self)
        self.control = ControlFlow(self)
        #: prefetches whose address payload was made before their loop (prefetch_payloads.py)
        self.hoisted_prefetches: dict[Operation, prefetch_payloads.HoistedPrefetch] = {}
        #: transposed reads whose address payload was made before their loop (transposed_payloads.py)
        self.hoisted_reads: dict[Operation, transposed_payloads.HoistedRead] = {}
        #: rotated loads' shared fragment arrays by number (message_pieces.load)
        self.rotation_buffers: dict[int, ir.Value] = {}

    # --- the kernel ------------------------------------------------------------------
    def kernel(self, fn: func.FuncOp) -> KernelABI:
        params, llargs = [], []
        for arg in fn.body.block.args:
            name = arg.name_hint or f"arg{arg.index}"
            if isinstance(arg.type, MemRefType):
                rank = len(arg.type.get_shape())
                llargs += [GLOBAL_PTR] + [I64] * rank + [I64] * (rank - 1)
                params.append(ArrayParam(name, type_name(arg.type.element_type), rank))
            else:
                llargs.append(llvm_scalar(arg.type))
                params.append(ScalarParam(name, type_name(arg.type)))
        kfn = ir.Function(self.llmod, ir.FunctionType(ir.VoidType(), llargs), fn.sym_name.data)
        kfn.calling_convention = "spir_kernel"
        sg = self.target.subgroup_size
        kfn.set_metadata("intel_reqd_sub_group_size", self.llmod.add_metadata([ir.Constant(I32, sg)]))
        self.b = ir.IRBuilder(kfn.append_basic_block("entry"))
        self._bind_args(fn, kfn)
        n_sg = fn.attributes.get("xetile.num_subgroups")
        self.workgroup_subgroups = n_sg.value.data if n_sg is not None else 1
        self._find_desc_sources(fn)
        self.wide_offsets = coordinates.has_wide_offsets(fn)
        for op in fn.body.block.ops:
            self.op(op)
        nbarrier.finish(self)
        if self.target.order_loop_latches:
            latch_order.order_latches(kfn)
        params = self._mark_block2d(fn, params)
        large_grf = "xetile.large_grf" in fn.attributes
        return KernelABI(kernel_name=fn.sym_name.data, params=tuple(params), subgroup_size=sg,
                         workgroup_size=sg * (n_sg.value.data if n_sg is not None else 1),
                         extra={"large_grf": True} if large_grf else {},
                         pitch_align_bytes=self.target.block2d_limits.pitch_align_bytes if self.target.has_2d_block_io
                         else 1,
                         min_width_bytes=self.target.block2d_limits.min_width_bytes if self.target.has_2d_block_io
                         else 0)

    # --- which arrays see 2D block messages (the launcher checks only those) -------------
    def _find_desc_sources(self, fn: func.FuncOp) -> None:
        """The memref under each descriptor family (through loops and offset updates)."""
        self.families = Families(fn)
        self.desc_source = {self.families.find(op.tensor_desc): op.source
                            for op in ops_in(fn) if isinstance(op, xegpu.CreateNdTdescOp)}
        self.block2d_sources: set[SSAValue] = set()

    def _uses_block2d(self, tensor_desc: SSAValue) -> None:
        """Record that ``tensor_desc``'s array is accessed with a 2D block message."""
        source = self.desc_source.get(self.families.find(tensor_desc))
        if source is not None:
            self.block2d_sources.add(source)

    def _row_block_read(self, tensor_desc: SSAValue, elem_bits: int, rows: int) -> bool:
        """Whether a one-element-per-lane row is read with a subgroup block read: on
        targets that read rows that way (no 2D block IO, single-unit block messages),
        for 32-bit elements (a bias or scale row; the 1x8 f16 pieces of a 32x32 tile read this
        way made an SLM permute kernel spill 192 B, per-lane 0), not for narrow per-lane
        arrays."""
        t = self.target
        return (rows == 1 and not t.has_2d_block_io and 1 in (t.subgroup_block_units or ())
                and elem_bits == 32 and not self.per_lane_array(tensor_desc))

    def slm_pitch(self, tensor_desc: SSAValue) -> int | None:
        """The row length (elements) of ``tensor_desc``'s buffer when it is static (an SLM
        buffer: its strides are constants), else None."""
        source = self.desc_source.get(self.families.find(tensor_desc))
        if source not in self.memrefs:
            return None
        pitch = self.memrefs[source][2][0]
        return pitch.constant if isinstance(pitch, ir.Constant) else None

    def per_lane_array(self, tensor_desc: SSAValue) -> bool:
        """Whether ``tensor_desc``'s array is one of the narrow ``per_lane_arrays``."""
        source = self.desc_source.get(self.families.find(tensor_desc))
        return isinstance(source, BlockArgument) and (source.name_hint or f"arg{source.index}") in self.per_lane_arrays

    def _mark_block2d(self, fn: func.FuncOp, params: list) -> list:
        has_2d = self.target.has_2d_block_io
        args = [a for a in fn.body.block.args]
        tiled = set(self.desc_source.values())
        return [replace(p, block2d=has_2d and arg in self.block2d_sources, tiled=arg in tiled)
                if isinstance(p, ArrayParam) else p for p, arg in zip(params, args, strict=True)]

    def _bind_args(self, fn: func.FuncOp, kfn: ir.Function) -> None:
        it = iter(kfn.args)
        for arg in fn.body.block.args:
            if isinstance(arg.type, MemRefType):
                rank = len(arg.type.get_shape())
                ptr = next(it)
                sizes = [next(it) for _ in range(rank)]
                strides = [next(it) for _ in range(rank - 1)] + [ir.Constant(I64, 1)]
                self.memrefs[arg] = (ptr, sizes, strides)
                self.values[arg] = ptr
            else:
                self.values[arg] = next(it)

    def v(self, value: SSAValue):
        return self.values[value]

    def op(self, op: Operation) -> None:
        if constants.handles(op):
            constants.lane_read(self, op)
            return
        if vector_ops.handles(op):
            vector_ops.emit(self, op)
            return
        if message_pieces.is_pieces_slice(self, op):
            message_pieces.emit_slice(self, op, llvm_type(op.result.type))
            return
        if lane_transpose.handles(op):
            lane_transpose.emit(self, op)
            return
        if a_from_c.handles(op):
            a_from_c.emit(self, op)
            return
        if scattered_ops.handles(op):
            scattered_ops.emit(self, op)
            return
        if nbarrier.handles(op):
            nbarrier.emit(self, op)
            return
        handler = (getattr(self, f"_{op.dialect_name()}_{type(op).__name__}", None)
                   or self.scalars.handler(op) or self.control.handler(op))
        if handler is None and op.dialect_name() == "arith":
            # scalar casts, compares, min/max, select...: a one-element fragment is a scalar,
            # so the element-wise emitter lowers them unchanged
            vector_ops.emit(self, op)
            return
        if handler is None:
            raise LoweringError(f"codegen does not support {op.name} yet", op)
        handler(op)

    # --- func ---------------------------------------------------------------------------
    def _func_ReturnOp(self, op) -> None:
        self.b.ret_void()

    def _xegpu_CreateNdTdescOp(self, op: xegpu.CreateNdTdescOp) -> None:
        t = op.tensor_desc.type
        if len(t.get_shape()) != 2 or not isinstance(op.source.type, MemRefType):
            raise LoweringError("codegen supports 2-D tensor descriptors over memrefs only", op)
        elem_bytes = bit_width(t.element_type) // 8
        b = self.b
        if op.shape:
            rows, cols = (self.v(s) for s in op.shape)
            pitch = self.v(op.strides[0])
        else:  # a static memref (an SLM buffer): sizes and strides from its type
            _, (rows, cols), (pitch, _) = self.memrefs[op.source]
        i32 = lambda x: b.trunc(x, I32)  # noqa: E731 - extents: the launcher bounds them (MAX_TILED_EXTENT)
        surface = (self.v(op.source), i32(b.mul(cols, ir.Constant(I64, elem_bytes))), i32(rows),
                   i32(b.mul(pitch, ir.Constant(I64, elem_bytes))))
        y, x = (self.v(o) for o in op.offsets)
        self.values[op.tensor_desc] = self._positioned(surface, x, y, elem_bytes)

    def _positioned(self, surface, x: ir.Value, y: ir.Value, elem_bytes: int) -> TDesc:
        """A descriptor of ``surface`` at the index position (x, y): 32-bit, or (a kernel
        with wide offsets) 64-bit and saturated for the messages."""
        if not self.wide_offsets:
            return TDesc(*surface, self.b.trunc(x, I32), self.b.trunc(y, I32))
        return TDesc(*surface, coordinates.saturate(self.b, x, elem_bytes), coordinates.saturate(self.b, y),
                     wide_x=x, wide_y=y)

    def _xegpu_UpdateNdOffsetOp(self, op: xegpu.UpdateNdOffsetOp) -> None:
        d = self.v(op.tensor_desc)
        if self.wide_offsets:
            dy, dx = (self.v(o) for o in op.offsets)
            elem_bytes = bit_width(op.tensor_desc.type.element_type) // 8
            self.values[op.result] = self._positioned(d.surface()[:4], self.b.add(d.wide_x, dx),
                                                      self.b.add(d.wide_y, dy), elem_bytes)
            return
        dy, dx = (self.b.trunc(self.v(o), I32) for o in op.offsets)
        self.values[op.result] = TDesc(d.base, d.width_bytes, d.height, d.pitch_bytes,
                                       self.b.add(d.x, dx), self.b.add(d.y, dy))

    def _block_args(self, op) -> tuple[TDesc, xegpu.TensorDescType, int, int, int]:
        t = op.tensor_desc.type
        rows, cols = t.get_shape()
        return self.v(op.tensor_desc), t, rows, cols, bit_width(t.element_type)

    def _xegpu_LoadNdOp(self, op: xegpu.LoadNdOp) -> None:
        d, t, rows, cols, bits = self._block_args(op)
        m = t.map
        if op.transpose is not None and rows == 1 and m is None:  # a row read as a replicated column
            pad = pad_bits(op.padding, t.element_type) if op.padding is not None else 0
            self.values[op.value] = vector_ops.load_row_replicated(self, d, bits, cols, llvm_type(op.value.type), pad)
            return
        if slm.is_slm(d) and op.transpose is not None:
            self.values[op.value] = slm.load_transposed(self, d, bits, rows, cols, llvm_type(op.value.type), m)
            return
        if slm.is_slm(d):
            self.values[op.value] = slm.load(self, d, bits, rows, cols, llvm_type(op.value.type), m,
                                             self.slm_pitch(op.tensor_desc))
            return
        pad = pad_bits(op.padding, t.element_type) if op.padding is not None else 0
        if op.transpose is not None and cols == 1:  # a column read as a row: one element per lane
            self.values[op.value] = vector_ops.load_column_per_lane(self, d, bits, rows, llvm_type(op.value.type), pad)
            return
        if cols == 1 or (rows == 1 and cols == self.target.subgroup_size and t.block_attr.arr_len == 1):
            # a column / one element per lane (a 1-row descriptor of several blocks is a 2D read)
            block_row = self._row_block_read(op.tensor_desc, bits, rows)
            self.values[op.value] = vector_ops.load_small(self, d, bits, rows, cols, llvm_type(op.value.type), pad,
                                                          block_row)
            return
        per_lane = self.per_lane_array(op.tensor_desc)
        if op.transpose is not None:  # the descriptor's map is the value's, transposed
            (l0, l1), (d0, d1) = m.layout, m.data
            lane_rows = LANE_ROWS_ATTR in op.attributes
            if transpose_kind(self.target, bits, rows, cols, (l1, l0), (d1, d0), per_lane, lane_rows) != "gather":
                self._uses_block2d(op.tensor_desc)
            hoisted = self.hoisted_reads.get(op)
            if hoisted is not None:  # its address payload was made before the loop (no padding)
                self.values[op.value] = self.b.bitcast(transposed_payloads.read(self, op, hoisted, (l1, l0), (d1, d0)),
                                                       llvm_type(op.value.type))
                return
            fn = self.lib.load_2d_transposed(bits, rows, cols, (l1, l0), (d1, d0), per_lane, lane_rows)
            raw = self.b.call(fn, d.surface())
            if pad:  # the transposed read filled 0 out of bounds
                pad_fn = self.lib.pad_2d_transposed(bits, rows, cols, (l1, l0), (d1, d0))
                raw = self.b.call(pad_fn, d.surface() + [raw, ir.Constant(ir.IntType(bits), pad)])
            self.values[op.value] = self.b.bitcast(raw, llvm_type(op.value.type))
            return
        lane_elems = rows * cols * t.block_attr.arr_len // self.target.subgroup_size
        if not pad and message_pieces.in_pieces(lane_elems) and message_pieces.only_sliced(op.value):
            # a coalesced message larger than one vector, cut into DPAS blocks
            fn = self.lib.load_2d_pieces(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data, per_lane)
            if not per_lane:
                self._uses_block2d(op.tensor_desc)
            buffer = op.attributes.get(load_rotation.BUFFER_ATTR)
            self.values[op.value] = message_pieces.load(self, fn, d.fields(), lane_elems,
                                                        llvm_scalar(op.value.type.element_type),
                                                        buffer.data if buffer is not None else None)
            return
        fn = self.lib.load_2d(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data, per_lane)
        if self.lib.load_2d_kind(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data, per_lane) != "gather":
            self._uses_block2d(op.tensor_desc)
        raw = self.b.call(fn, d.surface())
        if pad:  # the block read filled 0 out of bounds
            pad_fn = self.lib.pad_2d(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data)
            raw = self.b.call(pad_fn, d.surface() + [raw, ir.Constant(ir.IntType(bits), pad)])
        self.values[op.value] = self.b.bitcast(raw, llvm_type(op.value.type))

    def _xegpu_StoreNdOp(self, op: xegpu.StoreNdOp) -> None:
        d, t, rows, cols, bits = self._block_args(op)
        m = t.map
        if slm.is_slm(d):
            slm.store(self, d, bits, rows, cols, self.v(op.value), m, self.slm_pitch(op.tensor_desc))
            return
        if cols == 1 or (rows == 1 and cols == self.target.subgroup_size):  # a column / one element per lane
            vector_ops.store_small(self, d, bits, rows, cols, self.v(op.value))
            return
        per_lane = self.per_lane_array(op.tensor_desc)
        fn = self.lib.store_2d(bits, rows, cols, m.layout, m.data, per_lane)
        if self.lib.store_2d_kind(bits, rows, cols, m.layout, m.data, per_lane) != "scatter":
            self._uses_block2d(op.tensor_desc)
        value = self.b.bitcast(self.v(op.value), fn.function_type.args[-1])
        self.b.call(fn, d.surface() + [value])

    def _xegpu_PrefetchNdOp(self, op: xegpu.PrefetchNdOp) -> None:
        d, t, rows, cols, bits = self._block_args(op)
        hints = {k: getattr(op, k).data for k in ("l1_hint", "l2_hint", "l3_hint") if getattr(op, k) is not None}
        per_lane = self.per_lane_array(op.tensor_desc)
        if not per_lane and self.target.has_2d_block_io and self.target.find_block2d("prefetch", bits, rows, cols,
                                                                                     t.block_attr.arr_len):
            self._uses_block2d(op.tensor_desc)
        hoisted = self.hoisted_prefetches.get(op)
        if hoisted is not None:  # its address payload was made before the loop
            prefetch_payloads.prefetch(self, op, hoisted)
            return
        fn = self.lib.prefetch_2d(bits, rows, cols, t.block_attr.arr_len, self.target.cache_controls(hints), per_lane)
        self.b.call(fn, d.surface())

    def _xegpu_DpasOp(self, op: xegpu.DpasOp) -> None:
        a_t, b_t, r_t = op.lhs.type, op.rhs.type, op.result.type
        m = r_t.get_shape()[0]
        fn = self.lib.dpas(_mma_input(a_t.element_type), _mma_input(b_t.element_type),
                           type_name(r_t.element_type), m)
        fty = fn.function_type
        a = _cast_bits(self.b, self.v(op.lhs), fty.args[0])
        bb = _cast_bits(self.b, self.v(op.rhs), fty.args[1])
        acc = self.v(op.acc) if op.acc is not None else ir.Constant(fty.args[2], None)
        acc = _cast_bits(self.b, acc, fty.args[2])
        res = self.b.call(fn, [a, bb, acc])
        self.values[op.result] = _cast_bits(self.b, res, llvm_type(r_t))


def _mma_input(t) -> str:
    """The DPAS input name of element type ``t`` (f32 operands are tf32)."""
    name = type_name(t)
    return MMA_INPUT_ALIASES.get(name, name)


def pad_bits(attr, elem) -> int:
    """The bit pattern of a padding attribute in element type ``elem`` (0 for zero)."""
    value = attr.value.data
    bits = bit_width(elem)
    if isinstance(elem, BFloat16Type):
        return int(np.array([value], np.float32).view(np.uint32)[0]) >> 16
    if isinstance(elem, (Float16Type, Float32Type)):
        ftype, utype = (np.float16, np.uint16) if bits == 16 else (np.float32, np.uint32)
        return int(np.array([value], ftype).view(utype)[0])
    return int(value) & ((1 << bits) - 1)


def _cast_bits(b: ir.IRBuilder, value: ir.Value, to: ir.Type) -> ir.Value:
    return value if value.type == to else b.bitcast(value, to)


