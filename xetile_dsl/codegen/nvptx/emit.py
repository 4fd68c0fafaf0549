"""Subgroup-level XeTile IR -> LLVM IR for the NVPTX backend: one warp per program
(the subgroup is the warp), each tile value a list of per-lane scalars in the layout
:mod:`.layouts` chose, GPU ids through ``llvm.nvvm.read.ptx.sreg.*``.

The kernel's parameters: for each 2-D array a pointer (global address space) and its
rows, columns and row stride (i64, elements); each scalar as its own type (index as i64)."""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, MemRefType, VectorType

import numpy as np

from ...dialects import _mixed
from ...errors import LoweringError
from . import warp_ops, wgmma_attention, wgmma_gemm
from .for_loops import emit_for
from .layouts import Layout, assign
from .lane_values import GLOBAL, I32, I64, Mem, Tile, Vec, elem_of, intrinsic, llvm_type, scalar_op

_SREG = {"gpu.block_id": "ctaid", "gpu.grid_dim": "nctaid"}
_DIMS = {"x": 0, "y": 1, "z": 2}


class KernelEmitter:
    """Emits one ``func.func`` into an LLVM module."""

    def __init__(self, func, module: ir.Module, target, num_warps: int | None = None, num_stages: int | None = None):
        self.func, self.module, self.target = func, module, target
        #: the wgmma GEMM of the kernel (:mod:`.wgmma_gemm`), None for mma.sync
        self.wgmma = wgmma_gemm.plan_kernel(func, target, num_warps, num_stages)
        self.layouts: dict = assign(func, target.mma_warp_tile, target.max_program_warps, num_warps,
                                    self.wgmma.grid if self.wgmma else None)
        #: the depth of the shared-memory ring of a staged K loop (1: no staging)
        self.stages = num_stages or target.smem_stages
        grids = {layout.warps for layout in self.layouts.values()} or {(1, 1)}
        (wr, wc), = grids
        if self.wgmma is not None and (wr, wc) != self.wgmma.grid:
            self.wgmma = None
        #: the PTX architecture the kernel's code needs (sm_90a where it holds wgmma)
        self.ptx_arch = target.wgmma_ptx_arch if self.wgmma is not None else target.ptx_arch
        #: threads of one program (block): 32 a warp
        self.threads = target.warp_size * wr * wc
        self.values: dict = {}
        self.params: list[tuple[str, str]] = []   # (name, kind) for the launcher: "array" | dtype
        self.b: ir.IRBuilder | None = None
        self.tid = self.lane = self.warp = None
        #: staged loads (:mod:`.smem_pipeline`): op -> (plan, staged); the dynamic shared
        #: memory the program needs, bytes
        self.staged: dict = {}
        self.smem = None
        self.smem_bytes = 0
        self.smem_loops = 0
        #: the flash-attention key loops whose products are wgmma (:mod:`.wgmma_attention`):
        #: loop op -> plan, and each of their tile_mma ops -> plan
        self.attention_loops = wgmma_attention.plan_kernel(self) if self.wgmma is None else {}
        self.attention_mmas = {m: p for p in self.attention_loops.values() for m in (p.mma_s, p.mma_o)}
        if self.attention_loops:
            self.ptx_arch = target.wgmma_ptx_arch

    # --- the function --------------------------------------------------------------------
    def emit(self) -> ir.Function:
        types = []
        for arg in self.func.body.block.args:
            if isinstance(arg.type, MemRefType):
                rank = len(arg.type.get_shape())
                if rank < 2:
                    raise LoweringError("nvptx: 1-D array parameters are not supported on NVIDIA targets yet",
                                        self.func)
                types += [GLOBAL] + [I64] * (2 * rank - 1)
            else:
                types.append(llvm_type(arg.type, self.func))
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), types), self.func.sym_name.data)
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._bind_params(fn)
        self.tid = warp_ops.thread_id(self.b)
        self.lane = warp_ops.lane_id(self.b, self.tid)
        self.warp = warp_ops.warp_id(self.b, self.tid) if self.threads > self.target.warp_size else None
        self.block(self.func.body.block)
        self.b.ret_void()
        return fn

    def _bind_params(self, fn: ir.Function) -> None:
        args = iter(fn.args)
        for arg in self.func.body.block.args:
            name = arg.name_hint or f"arg{arg.index}"
            if isinstance(arg.type, MemRefType):
                rank = len(arg.type.get_shape())
                ptr = next(args)
                sizes = tuple(next(args) for _ in range(rank))
                strides = tuple(next(args) for _ in range(rank - 1)) + (ir.Constant(I64, 1),)
                self.values[arg] = Mem(ptr, sizes[-2], sizes[-1], strides[-2], arg.type.element_type, sizes, strides)
                self.params.append((name, "array"))
            else:
                self.values[arg] = next(args)
                self.params.append((name, str(arg.type)))

    def block(self, block) -> list | None:
        """Emit ``block``'s ops; the operands of its terminator (scf.yield) when it has one."""
        for op in block.ops:
            if op.name in ("scf.yield", "func.return"):
                return [self.values[v] for v in op.operands]
            self.op(op)
        return None

    def op(self, op) -> None:
        handler = _HANDLERS.get(op.name)
        if handler is not None:
            handler(self, op)
        elif op.name.startswith(("arith.", "math.")):
            self.elementwise(op)
        else:
            raise LoweringError(f"nvptx: {op.name} is not supported on NVIDIA targets yet (the first slice of the "
                                f"NVIDIA backend: tiles, element-wise math, reductions, broadcasts, tile_mma, "
                                f"scf.for)", op)

    # --- element-wise ---------------------------------------------------------------------
    def elementwise(self, op) -> None:
        args = [self.values[v] for v in op.operands]
        result = op.results[0]
        if not isinstance(result.type, VectorType):
            self.values[result] = scalar_op(self.b, op, args, result.type)
            return
        layout = self.layouts[result]
        count = len(layout.slots())
        per_slot = [a.slots if isinstance(a, Vec) else [a] * count for a in args]
        slots = [scalar_op(self.b, op, list(vals), result.type) for vals in zip(*per_slot)]
        self.values[result] = Vec(layout, elem_of(result.type), slots)

    def constant(self, op) -> None:
        result, value = op.result, op.value
        t = llvm_type(result.type, op)
        if not isinstance(result.type, VectorType):
            self.values[result] = ir.Constant(t, _number(value, t))
            return
        layout = self.layouts[result]
        values = value.get_values() if isinstance(value, DenseIntOrFPElementsAttr) else [value.value.data]
        if len(set(values)) <= 1:
            self.values[result] = Vec(layout, elem_of(result.type), [ir.Constant(t, _number(values[0], t))]
                                      * len(layout.slots()))
            return
        index = self._index_constant(op, values, layout, t)
        self.values[result] = index if index is not None else self._table_constant(op, values, layout, t)

    def _index_constant(self, op, values: list, layout: Layout, t: ir.Type) -> Vec | None:
        """An integer constant holding each element's column (``xt.arange`` as a row) or row
        index (its transpose): each slot is the lane's base plus the slot's offset, with no
        table (None for other constants)."""
        rows, cols = layout.shape
        if not isinstance(t, ir.IntType) or len(values) != rows * cols:
            return None
        flat = [int(v) for v in values]
        if flat == [i % cols for i in range(rows * cols)]:
            axis = 1
        elif flat == [i // cols for i in range(rows * cols)]:
            axis = 0
        else:
            return None
        b = self.b
        base = warp_ops.lane_bases(b, self.lane, layout, self.warp)[axis]
        base = b.trunc(base, t) if t.width < 64 else base
        slots = [b.add(base, ir.Constant(t, pos[axis])) if pos[axis] else base for pos in layout.slots()]
        return Vec(layout, elem_of(op.result.type), slots)

    def _table_constant(self, op, values: list, layout: Layout, t: ir.Type) -> Vec:
        """A constant that differs per element: a table in constant memory, each slot read
        at its element (index (r0 + dr) * C + c0 + dc)."""
        table_type = ir.ArrayType(t, len(values))
        table = ir.GlobalVariable(self.module, table_type, f"nv_const{len(self.module.globals)}", addrspace=4)
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(table_type, [_number(v, t) for v in values])
        b, cols = self.b, layout.shape[1]
        r0, c0 = warp_ops.lane_bases(b, self.lane, layout, self.warp)
        slots = []
        for dr, dc in layout.slots():
            index = b.add(b.mul(b.add(r0, ir.Constant(I64, dr)), ir.Constant(I64, cols)), b.add(c0, ir.Constant(I64, dc)))
            slots.append(b.load(b.gep(table, [ir.Constant(I64, 0), index], source_etype=table_type), typ=t))
        return Vec(layout, elem_of(op.result.type), slots)

    # --- ids, memrefs, tiles ----------------------------------------------------------------
    def sreg(self, op) -> None:
        dim = "xyz"[_dim_of(op)]
        name = f"llvm.nvvm.read.ptx.sreg.{_SREG[op.name]}.{dim}"
        self.values[op.results[0]] = self.b.zext(intrinsic(self.b, name, I32, []), I64)

    def strided_metadata(self, op) -> None:
        mem = self.values[op.operands[0]]
        outs = list(op.results)
        self.values[outs[0]] = mem
        self.values[outs[1]] = ir.Constant(I64, 0)
        sizes = mem.sizes or (mem.rows, mem.cols)
        strides = mem.strides or (mem.stride, ir.Constant(I64, 1))
        for out, v in zip(outs[2:], (*sizes, *strides)):
            self.values[out] = v

    def reinterpret_cast(self, op) -> None:
        """A 2-D view (unit inner stride) of an array at an element offset: ``q[z, h]``."""
        mem = self.values[op.source]

        def entries(static, values):
            it = iter(values)
            return [self.values[next(it)] if v == memref.DYNAMIC_INDEX else ir.Constant(I64, v) for v in static.get_values()]

        (offset,) = entries(op.static_offsets, op.offsets)
        sizes = entries(op.static_sizes, op.sizes)
        strides = entries(op.static_strides, op.strides)
        if len(sizes) != 2 or op.static_strides.get_values()[-1] != 1:
            raise LoweringError("nvptx: only 2-D views with unit inner stride are supported on NVIDIA targets yet",
                                op)
        ptr = self.b.gep(mem.ptr, [offset], source_etype=llvm_type(mem.elem))
        self.values[op.result] = Mem(ptr, sizes[0], sizes[1], strides[0], mem.elem)

    def init_tile(self, op) -> None:
        tile_type = op.tile.type
        if tile_type.attr.order_list not in ((1, 0), (0, 1)) or tile_type.attr.is_scattered or \
                tile_type.attr.in_slm:
            raise LoweringError("nvptx: only global block tiles (order [1, 0] or [0, 1]) are supported on NVIDIA "
                                "targets yet", op)
        if not isinstance(op.source.type, MemRefType):
            raise LoweringError("nvptx: tiles over raw addresses are not supported on NVIDIA targets yet", op)
        row, col = (ir.Constant(I64, o) if isinstance(o, int) else self.values[o] for o in _mixed.mixed(op, op.offsets))
        self.values[op.tile] = Tile(self.values[op.source], row, col, tuple(tile_type.get_shape()),
                                    tile_type.attr.order_list == (0, 1))

    def update_offset(self, op) -> None:
        tile = self.values[op.tile]
        if op.indices is not None:
            raise LoweringError("nvptx: scattered tiles are not supported on NVIDIA targets yet", op)
        dx, dy = (ir.Constant(I64, o) if isinstance(o, int) else self.values[o]
                  for o in _mixed.mixed(op, op.offset_values()))
        self.values[op.result] = Tile(tile.mem, self.b.add(tile.row, dx), self.b.add(tile.col, dy), tile.shape,
                                      tile.transposed)

    def load_tile(self, op) -> None:
        if op.padding is not None:
            raise LoweringError("nvptx: load_tile padding values are not supported on NVIDIA targets yet", op)
        if op in self.staged:
            stager, entry = self.staged[op]
            self.values[op.value] = stager.read(self, *entry)
            return
        self.values[op.value] = warp_ops.load(self.b, self.lane, self.values[op.tile], self.layouts[op.value],
                                              elem_of(op.value.type), op, self.warp)

    def store_tile(self, op) -> None:
        warp_ops.store(self.b, self.lane, self.values[op.value], self.values[op.tile], self.warp)

    def reduce(self, op) -> None:
        dims = tuple(op.reduction_dims.get_values())
        self.values[op.result] = warp_ops.reduce(self.b, self.values[op.source], dims, op.kind.data,
                                                 self.layouts[op.result], op)

    def tile_broadcast(self, op) -> None:
        dims = tuple(op.broadcast_dims.get_values())
        self.values[op.result] = warp_ops.broadcast(self.b, self.lane, self.values[op.source], dims,
                                                    self.layouts[op.result], op)

    def vector_broadcast(self, op) -> None:
        src = self.values[op.operands[0]]
        if isinstance(src, Vec):
            raise LoweringError("nvptx: vector.broadcast of a vector is not supported on NVIDIA targets yet", op)
        layout = self.layouts[op.results[0]]
        self.values[op.results[0]] = Vec(layout, elem_of(op.results[0].type), [src] * len(layout.slots()))

    def tile_mma(self, op) -> None:
        c = self.values[op.c] if op.c is not None else None
        if self.wgmma is not None and op is self.wgmma.mma:
            self.values[op.output] = wgmma_gemm.mma(self, self.wgmma, c)
            return
        if op in self.attention_mmas:
            self.values[op.output] = wgmma_attention.mma(self, self.attention_mmas[op], op, self.values[op.a], c,
                                                         self.layouts[op.output])
            return
        self.values[op.output] = warp_ops.mma(self.b, self.values[op.a], self.values[op.b], c,
                                              self.layouts[op.output], op)

    def scf_for(self, op) -> None:
        emit_for(self, op)


def _dim_of(op) -> int:
    dim = op.properties.get("dimension") or op.attributes.get("dimension")
    text = str(dim)
    return next(i for name, i in _DIMS.items() if f"dim {name}" in text or text.endswith(name + ">"))


def _number(value, t: ir.Type):
    if isinstance(value, (IntegerAttr, FloatAttr)):
        value = value.value.data
    if isinstance(t, ir.IntType):
        if t.width == 16 and isinstance(value, float):   # bf16 bits, rounded to nearest even
            bits = int(np.array(value, np.float32).view(np.uint32))
            return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
        return int(value)
    return float(value)


_HANDLERS = {
    "arith.constant": KernelEmitter.constant, "gpu.block_id": KernelEmitter.sreg, "gpu.grid_dim": KernelEmitter.sreg,
    "memref.extract_strided_metadata": KernelEmitter.strided_metadata,
    "memref.reinterpret_cast": KernelEmitter.reinterpret_cast, "xetile.init_tile": KernelEmitter.init_tile,
    "xetile.update_tile_offset": KernelEmitter.update_offset, "xetile.load_tile": KernelEmitter.load_tile,
    "xetile.store_tile": KernelEmitter.store_tile, "xetile.tile_reduce": KernelEmitter.reduce,
    "xetile.tile_broadcast": KernelEmitter.tile_broadcast, "vector.broadcast": KernelEmitter.vector_broadcast,
    "xetile.tile_mma": KernelEmitter.tile_mma, "scf.for": KernelEmitter.scf_for,
    # a cache hint: the first slice's per-lane loads go through L1/L2 without it
    "xetile.prefetch_tile": lambda self, op: None,
}
