"""Subgroup-level XeTile IR -> LLVM IR for the NVPTX backend: one warp per program
(the subgroup is the warp), each tile value a list of per-lane scalars in the layout
:mod:`.layouts` chose, GPU ids through ``llvm.nvvm.read.ptx.sreg.*``.

The kernel's parameters: for each 2-D array a pointer (global address space) and its
rows, columns and row stride (i64, elements); a 1-D array a pointer and its extent (a
one-row array: the frontend's 1-D tiles are [1, n] tiles over it); each scalar as its
own type (index as i64); last, where the wgmma GEMM or the attention key loops fill
their rings by TMA, one tensor map (128 bytes, byval) for each array they stream
(:attr:`KernelEmitter.tensor_maps`)."""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, MemRefType, VectorType

import numpy as np
from dataclasses import dataclass

from ...dialects import _mixed
from ...errors import LoweringError
from . import atomic_memory, smem_pipeline, tma, warp_ops, wgmma_attention, wgmma_gemm
from .for_loops import emit_for, emit_while, flatten, rebuild
from .layouts import Layout, assign, mma_padding
from .lane_values import (GLOBAL, I32, I64, Mem, Tile, Vec, elem_of, intrinsic, is_fp8, joined, llvm_type,
                          scalar_op)

_SREG = {"gpu.block_id": "ctaid", "gpu.grid_dim": "nctaid"}
_DIMS = {"x": 0, "y": 1, "z": 2}


class KernelEmitter:
    """Emits one ``func.func`` into an LLVM module."""

    def __init__(self, func, module: ir.Module, target, num_warps: int | None = None, num_stages: int | None = None,
                 tma_arrays: tuple = ()):
        self.func, self.module, self.target = func, module, target
        #: subgroups of a workgroup-level kernel (the distribution pass's
        #: ``xetile.num_subgroups``): one warp each, each value a warp's own (1 elsewhere)
        self.subgroups = subgroups_of(func)
        if self.subgroups > 1:
            if self.subgroups * target.warp_size > target.max_threads_per_block:
                raise LoweringError(f"nvptx: a workgroup of {self.subgroups} subgroups is {self.subgroups} warps, more "
                                    f"than the {target.max_threads_per_block // target.warp_size} of a block on "
                                    f"{target.name}; use a wg_map sg_layout of fewer subgroups", func)
            num_warps, num_stages = 1, 1    # (no program-wide staging or wgmma: each warp has its own tiles)
        #: the wgmma GEMM of the kernel (:mod:`.wgmma_gemm`), None for mma.sync; its ring
        #: is filled by TMA where ``tma_arrays`` names both operands' arrays
        self.wgmma = wgmma_gemm.plan_kernel(func, target, num_warps, num_stages, tma_arrays)
        self.layouts: dict = assign(func, target.mma_warp_tile, target.max_program_warps, num_warps,
                                    self.wgmma.grid if self.wgmma else None)
        #: the depth of the shared-memory ring of a staged K loop (1: no staging)
        self.stages = num_stages or target.smem_stages
        grids = {layout.warps for layout in self.layouts.values()} or {(1, 1)}
        (wr, wc), = grids
        if self.wgmma is not None and (wr, wc) != self.wgmma.grid:
            self.wgmma = None
        #: (array, box rows, box columns) of each tensor-map parameter, after the others
        self.tensor_maps = self.wgmma.tensor_maps() if self.wgmma is not None else []
        #: the PTX architecture the kernel's code needs (sm_90a where it holds wgmma)
        self.ptx_arch = target.wgmma_ptx_arch if self.wgmma is not None else target.ptx_arch
        #: threads of one program (block): 32 a warp
        self.threads = target.warp_size * wr * wc * self.subgroups
        self.values: dict = {}
        self.params: list[tuple[str, str]] = []   # (name, kind) for the launcher: "array" | dtype
        self.b: ir.IRBuilder | None = None
        self.tid = self.lane = self.warp = None
        #: staged loads (:mod:`.smem_pipeline`): op -> (plan, staged); the dynamic shared
        #: memory the program needs, bytes
        self.staged: dict = {}
        self.smem = None
        self.smem_bytes = 0
        #: the shared local memory a workgroup-level kernel's ``memref.alloc`` ops took, bytes
        self.slm_bytes = 0
        self.smem_loops = 0
        self.grid_constants: list[int] = []
        #: the flash-attention key loops whose products are wgmma (:mod:`.wgmma_attention`):
        #: loop op -> plan, and each of their tile_mma ops -> plan
        #: the arrays the launch found describable by tensor maps (decisions 051, 056)
        self.tma_arrays = tuple(tma_arrays)
        self.attention_loops = wgmma_attention.plan_kernel(self) if self.wgmma is None and self.subgroups == 1 \
            else {}
        self.attention_mmas = {m: p for p in self.attention_loops.values() for m in (p.mma_s, p.mma_o)}
        if self.attention_loops:
            self.ptx_arch = target.wgmma_ptx_arch
            self.tensor_maps = wgmma_attention.tensor_maps(self.attention_loops)
        #: the tensor maps' generic addresses (the kernel's parameters), once bound
        self.maps: list = []
        #: integer tile values that are an index (``xt.arange``) plus a scalar, and the
        #: compares of one against a scalar bound (:class:`IndexRange`, :class:`Bounded`)
        self.ranges: dict = {}
        self.bounded: dict = {}

    # --- the function --------------------------------------------------------------------
    def emit(self) -> ir.Function:
        types = []
        for arg in self.func.body.block.args:
            if isinstance(arg.type, MemRefType):
                rank = len(arg.type.get_shape())
                if rank < 1:
                    raise LoweringError("nvptx: 0-D array parameters are not supported on NVIDIA targets; pass a "
                                        "1-D array of one element", self.func)
                types += [GLOBAL] + [I64] * (2 * rank - 1)
            else:
                types.append(llvm_type(arg.type, self.func))
        first_map = len(types)
        types += [ir.PointerType(tma.MAP_TYPE)] * len(self.tensor_maps)
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), types), self.func.sym_name.data)
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._bind_params(fn)
        if self.tensor_maps:
            for i in range(first_map, len(types)):
                tma.map_param(fn, i)
            self.maps = [tma.map_address(self.b, fn.args[i]) for i in range(first_map, len(types))]
            if self.wgmma is not None:
                self.wgmma.maps = self.maps
            #: the tensor maps' parameter positions, marked grid_constant (:func:`.ptx.mark_kernel`)
            self.grid_constants = list(range(first_map, len(types)))
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
                if rank == 1:   # one row of sizes[0] elements
                    self.values[arg] = Mem(ptr, ir.Constant(I64, 1), sizes[0], sizes[0], arg.type.element_type, sizes,
                                           strides)
                else:
                    self.values[arg] = Mem(ptr, sizes[-2], sizes[-1], strides[-2], arg.type.element_type, sizes,
                                           strides)
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
        elif op.name.startswith(("arith.", "math.")) or op.name == "xetile.extern_elementwise":
            self.elementwise(op)
        else:
            raise LoweringError(f"nvptx: {op.name} is not supported on NVIDIA targets yet (the first slice of the "
                                f"NVIDIA backend: tiles, element-wise math, reductions, broadcasts, tile_mma, "
                                f"scf.for, scf.while, scf.if)", op)

    # --- element-wise ---------------------------------------------------------------------
    def elementwise(self, op) -> None:
        if op.name == "arith.extf" and is_fp8(elem_of(op.operands[0].type)) and not self.target.fp8_cvt:
            raise LoweringError(f"nvptx: fp8 values are not supported on NVIDIA targets before sm_89 ({self.target.name} "
                                f"has no cvt.rn.f16x2.e4m3x2); sm90 takes them", op)
        args = [self.values[v] for v in op.operands]
        result = op.results[0]
        if not isinstance(result.type, VectorType):
            self.values[result] = scalar_op(self.b, op, args, result.type)
            return
        if op.name == "arith.select" and op.operands[0] in self.bounded:
            self.values[result] = self._bounded_select(op, args)
            return
        self._track_ranges(op, args)
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
        offsets = [pos[axis] for pos in layout.slots()]
        slots = [b.add(base, ir.Constant(t, d)) if d else base for d in offsets]
        if t.width in (16, 32, 64):
            self.ranges[op.result] = IndexRange(base, tuple(offsets))
        return Vec(layout, elem_of(op.result.type), slots)

    def _track_ranges(self, op, args: list) -> None:
        """Note an index plus a scalar (``xt.arange(0, BC) + c``) and the compare of one
        against a scalar (``cols < N``), for :meth:`_bounded_select`."""
        name, ins = op.name, list(op.operands)
        if name == "arith.addi":
            for i in (0, 1):
                other = _uniform(args[1 - i])
                if ins[i] in self.ranges and other is not None:
                    r = self.ranges[ins[i]]
                    self.ranges[op.result] = IndexRange(self.b.add(r.base, other), r.offsets)
                    return
        elif name == "arith.cmpi":
            pred = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"][op.predicate.value.data]
            flipped = {"sgt": "slt", "sge": "sle"}
            if pred in ("slt", "sle") and ins[0] in self.ranges and _uniform(args[1]) is not None:
                self.bounded[op.result] = Bounded(self.ranges[ins[0]], _uniform(args[1]), pred == "sle")
            elif pred in flipped and ins[1] in self.ranges and _uniform(args[0]) is not None:
                self.bounded[op.result] = Bounded(self.ranges[ins[1]], _uniform(args[0]), pred == "sge")

    def _bounded_select(self, op, args: list) -> Vec:
        """``where(cols < N, a, b)`` with ``cols`` an index plus a scalar: where every slot
        of this thread is below the bound (one compare of its largest index) the slots are
        ``a``'s as they are; only the other threads (a row's edge) take a branch that
        selects slot by slot.  So a whole row's program pays no per-element mask."""
        b, bound = self.b, self.bounded[op.operands[0]]
        cond, true, false = args
        layout = self.layouts[op.results[0]]
        count = len(layout.slots())
        true_slots = true.slots if isinstance(true, Vec) else [true] * count
        false_slots = false.slots if isinstance(false, Vec) else [false] * count
        before = b.block
        with b.if_then(b.not_(bound.all_true(b)), likely=False):
            # each slot's compare made here, from the base (the tile's own compares, made
            # where the op stood, would keep every slot's index live across the fast path)
            slow = [b.select(c, t_, f_) for c, t_, f_ in zip(bound.slots(b), true_slots, false_slots)]
            slow_block = b.block
        return Vec(layout, elem_of(op.results[0].type), joined(b, true_slots, before, slow, slow_block))

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
    def subgroup_id(self, op) -> None:
        """The subgroup of a workgroup-level kernel: the warp (``tid / 32``)."""
        self.values[op.results[0]] = self.warp if self.warp is not None else ir.Constant(I64, 0)

    def slm_alloc(self, op) -> None:
        """``memref.alloc`` in shared local memory (space 3): a 16-byte aligned part of the
        program's dynamic shared memory (a workgroup-level kernel stages nothing else
        there), read and written by the warps' per-lane accesses."""
        mtype = op.results[0].type
        shape = mtype.get_shape()
        space = getattr(mtype.memory_space, "value", None)
        if len(shape) != 2 or -1 in shape or getattr(space, "data", None) != 3:
            raise LoweringError("nvptx: memref.alloc takes a static 2-D shape in shared local memory (space 3)", op)
        elem = mtype.element_type
        offset = -(-self.slm_bytes // 16) * 16
        self.slm_bytes = offset + shape[0] * shape[1] * max(elem.bitwidth // 8, 1)
        if self.slm_bytes > self.target.smem_per_block:
            raise LoweringError(f"nvptx: shared local memory of {self.slm_bytes} bytes; a block on {self.target.name} "
                                f"has {self.target.smem_per_block}", op)
        self.smem_bytes = max(self.smem_bytes, self.slm_bytes)
        base = self.b.add(self.b.zext(smem_pipeline.smem_base(self), I64), ir.Constant(I64, offset))
        rows, cols = (ir.Constant(I64, n) for n in shape)
        # an opaque shared pointer, as the arrays' (from the 32-bit shared address)
        self.values[op.results[0]] = Mem(self.b.inttoptr(base, ir.PointerType(addrspace=3)), rows, cols, cols, elem)

    def barrier(self, op) -> None:
        """``gpu.barrier``: every warp of the program (``bar.sync 0``)."""
        warp_ops.bar_sync(self.b)

    def named_barrier(self, op) -> None:
        """XeGPU's named barriers as PTX's: ``init_nbarrier id, n`` is barrier ``id + 1``
        (0 is ``bar.sync 0``'s) over ``n`` warps; ``nbarrier_wait`` is ``bar.sync id, 32 n``
        (arrive and wait: the subgroup's arrive, which comes first, emits nothing)."""
        if op.name == "xegpu.alloc_nbarrier":
            count = op.properties.get("nbarrier_num") or op.attributes.get("nbarrier_num")
            most = self.target.barriers_per_block - 1
            if count is not None and int(count.value.data) > most:
                raise LoweringError(f"nvptx: {int(count.value.data)} named barriers; a block on {self.target.name} "
                                    f"has {most} besides bar.sync 0's", op)
        elif op.name == "xegpu.init_nbarrier":
            ident, count = (self._i32(self.values[v]) for v in op.operands[:2])
            self.values[op.results[0]] = (self.b.add(ident, ir.Constant(I32, 1)),
                                          self.b.mul(count, ir.Constant(I32, self.target.warp_size)))
        elif op.name == "xegpu.nbarrier_wait":
            ident, threads = self.values[op.operands[0]]
            self.b.asm(ir.FunctionType(ir.VoidType(), [I32, I32]), "bar.sync $0, $1;", "r,r,~{memory}",
                       [ident, threads], True)

    def _i32(self, v):
        width = v.type.width
        return self.b.trunc(v, I32) if width > 32 else self.b.zext(v, I32) if width < 32 else v

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
        if tile_type.attr.is_scattered and not tile_type.attr.in_slm and isinstance(op.source.type, MemRefType):
            indices = self.values[op.offsets[0]]
            self.values[op.tile] = Scattered(self.values[op.source], indices)
            return
        if tile_type.attr.order_list not in ((1, 0), (0, 1)) or tile_type.attr.is_scattered or \
                tile_type.attr.in_slm and not (isinstance(op.source.owner, memref.AllocOp)):
            raise LoweringError("nvptx: only block tiles (order [1, 0] or [0, 1]) of global memory or of a shared "
                                "local memory memref.alloc are supported on NVIDIA targets yet", op)
        mem = self.values[op.source] if isinstance(op.source.type, MemRefType) else self._address_array(op)
        transposed = tile_type.attr.order_list == (0, 1)
        if isinstance(op.source.type, MemRefType) and len(op.sizes) == 2:
            # extents of the tile's own (a masked store's row edge shrinks them: frontend/edge_masks.py);
            # an order (0, 1) tile's sizes are its view's, [memory columns, memory rows]
            sizes = list(op.sizes)
            rows, cols = (self.values[v] for v in (sizes[::-1] if transposed else sizes))
            if rows is not mem.rows or cols is not mem.cols:
                mem = Mem(mem.ptr, rows, cols, mem.stride, mem.elem)
        row, col = (ir.Constant(I64, o) if isinstance(o, int) else self.values[o] for o in _mixed.mixed(op, op.offsets))
        self.values[op.tile] = Tile(mem, row, col, tuple(tile_type.get_shape()), transposed)

    def _address_array(self, op) -> Mem:
        """The array an ``init_tile`` on an i64 address (an array table's entry, ``tab[g]``)
        tiles: the address as a global pointer, its two dynamic extents and row stride."""
        if len(op.sizes) != 2 or len(op.strides) != 2:
            raise LoweringError("nvptx: a tile over an i64 address needs its 2 extents and 2 strides", op)
        col_stride = op.strides[1].owner
        if not (isinstance(col_stride, arith.ConstantOp) and col_stride.value.value.data == 1):
            raise LoweringError("nvptx: a tile over an i64 address must have unit column stride (row-major)", op)
        address = self.values[op.source]
        if not isinstance(address, ir.Value) or not isinstance(address.type, ir.IntType):
            raise LoweringError("nvptx: the base of a tile over an address must be an i64 scalar", op)
        rows, cols = (self.values[v] for v in op.sizes)
        return Mem(self.b.inttoptr(address, GLOBAL), rows, cols, self.values[op.strides[0]],
                   op.tile.type.element_type)

    def update_offset(self, op) -> None:
        tile = self.values[op.tile]
        if op.indices is not None:
            raise LoweringError("nvptx: scattered tiles are not supported on NVIDIA targets yet", op)
        dx, dy = (ir.Constant(I64, o) if isinstance(o, int) else self.values[o]
                  for o in _mixed.mixed(op, op.offset_values()))
        self.values[op.result] = Tile(tile.mem, self.b.add(tile.row, dx), self.b.add(tile.col, dy), tile.shape,
                                      tile.transposed)

    def load_tile(self, op) -> None:
        if op in self.staged:       # (staged loads have no padding: smem_pipeline, wgmma_*)
            stager, entry = self.staged[op]
            self.values[op.value] = stager.read(self, *entry)
            return
        tile, layout, elem = self.values[op.tile], self.layouts[op.value], elem_of(op.value.type)
        value = warp_ops.load(self.b, self.lane, tile, layout, elem, op, self.warp)
        if op.padding is not None:  # the slots outside the array: the padding, not the loads' 0
            pad = self._padding(op, value.slots[0].type)
            places = warp_ops.positions(self.b, self.lane, tile, layout, self.warp)
            value = Vec(layout, elem, [self.b.select(inb, v, pad) for (inb, _), v in zip(places, value.slots)])
        self.values[op.value] = value

    def _padding(self, op, t: ir.Type) -> ir.Constant:
        """A load's ``padding`` attribute as a constant of the slots' type ``t``."""
        attr = op.padding
        if not isinstance(attr, (IntegerAttr, FloatAttr)):
            raise LoweringError(f"nvptx: a load's padding must be a number, got {attr}", op)
        return ir.Constant(t, _number(attr, t))

    def _gathered(self, op, value_layout: Layout) -> tuple:
        tile, mask = self.values[op.tile], self.values[op.mask]
        for what, v in (("indices", tile.indices), ("mask", mask)):
            if not isinstance(v, Vec) or v.layout != value_layout:
                raise LoweringError(f"nvptx: a scattered tile whose {what} take another layout than its value "
                                    f"({getattr(getattr(v, 'layout', None), 'kind', 'scalar')} against "
                                    f"{value_layout.kind}) is not supported yet", op)
        t = llvm_type(tile.mem.elem)
        zero = ir.Constant(tile.indices.slots[0].type, 0)
        ptrs = [self.b.gep(tile.mem.ptr, [self.b.select(m, i, zero)], source_etype=t)
                for i, m in zip(tile.indices.slots, mask.slots)]
        return ptrs, mask.slots, t

    def load_gather(self, op) -> None:
        """Each slot read at the array's base plus its index where its mask is set, else the
        padding (0 by default; masked slots read the first element: no lane reads out of
        bounds)."""
        layout = self.layouts[op.value]
        ptrs, masks, t = self._gathered(op, layout)
        pad = self._padding(op, t) if op.padding is not None else ir.Constant(t, 0)
        slots = [self.b.select(m, self.b.load(p, typ=t), pad) for p, m in zip(ptrs, masks)]
        self.values[op.value] = Vec(layout, elem_of(op.value.type), slots)

    def store_scatter(self, op) -> None:
        """Each slot written at its index where its mask is set (a replicated value by the
        lanes that hold it first)."""
        value = self.values[op.value]
        ptrs, masks, _ = self._gathered(op, value.layout)
        first = warp_ops.first_holder(self.b, self.lane, value.layout, self.warp)
        for v, p, m in zip(value.slots, ptrs, masks):
            with self.b.if_then(self.b.and_(m, first) if first is not None else m):
                self.b.store(v, p)

    def store_tile(self, op) -> None:
        plan = self.wgmma
        if plan is not None and plan.c_store is op and len(plan.maps or ()) == 3 and \
                wgmma_gemm.store_c(self, plan, self.values[op.value], self.values[op.tile]):
            return
        warp_ops.store(self.b, self.lane, self.values[op.value], self.values[op.tile], self.warp)

    def reduce(self, op) -> None:
        dims = tuple(op.reduction_dims.get_values())
        self.values[op.result] = warp_ops.reduce(self.b, self.values[op.source], dims, op.kind.data,
                                                 self.layouts[op.result], op, self.lane, self.warp, _in_loop(op))

    def tile_broadcast(self, op) -> None:
        dims = tuple(op.broadcast_dims.get_values())
        self.values[op.result] = warp_ops.broadcast(self.b, self.lane, self.values[op.source], dims,
                                                    self.layouts[op.result], op)
        # a broadcast slot is one of the same lane's source slots
        if op.source in self.bounded:
            bound = self.bounded[op.source]
            which = warp_ops.broadcast_sources(self.values[op.source].layout, dims, self.layouts[op.result])
            if which is None:
                return
            offsets = tuple(bound.range.offsets[i] for i in which)
            self.bounded[op.result] = Bounded(IndexRange(bound.range.base, offsets), bound.bound, bound.inclusive)

    def vector_broadcast(self, op) -> None:
        src = self.values[op.operands[0]]
        if isinstance(src, Vec):
            raise LoweringError("nvptx: vector.broadcast of a vector is not supported on NVIDIA targets yet", op)
        layout = self.layouts[op.results[0]]
        self.values[op.results[0]] = Vec(layout, elem_of(op.results[0].type), [src] * len(layout.slots()))

    def tile_transpose(self, op) -> None:
        self.values[op.result] = warp_ops.transpose(self.b, self.lane, self.values[op.source],
                                                    self.layouts[op.result], op, self.warp, _in_loop(op),
                                                    self.target.static_smem_per_block)

    def tile_mma(self, op) -> None:
        c = self.values[op.c] if op.c is not None else None
        if self.wgmma is not None and op is self.wgmma.mma:
            self.values[op.output] = wgmma_gemm.mma(self, self.wgmma, c)
            return
        if op in self.attention_mmas:
            self.values[op.output] = wgmma_attention.mma(self, self.attention_mmas[op], op, self.values[op.a], c,
                                                         self.layouts[op.output])
            return
        padding = mma_padding(op)
        if padding is not None:
            self.values[op.output] = warp_ops.padded_mma(self.b, self.lane, self.values[op.a], self.values[op.b], c,
                                                         self.layouts[op.output], padding, op)
            return
        bv = self.values[op.b]
        if bv.layout.kind != "mma_b":      # another fragment (an mma result): moved into B's
            bv = warp_ops.relayout(self.b, self.lane, bv, Layout("mma_b", bv.layout.shape, bv.layout.warps), op,
                                   warp=self.warp, in_loop=_in_loop(op),
                                   static_smem=self.target.static_smem_per_block)
        self.values[op.output] = warp_ops.mma(self.b, self.values[op.a], bv, c, self.layouts[op.output], op)

    def scf_for(self, op) -> None:
        emit_for(self, op)

    def scf_while(self, op) -> None:
        emit_while(self, op)

    def scf_if(self, op) -> None:
        """``scf.if`` on a scalar condition: a block per region, one phi per LLVM value of
        each result (every slot of a tile value) where they meet."""
        b = self.b
        cond = self.values[op.cond]
        if isinstance(cond, Vec):
            raise LoweringError("nvptx: scf.if on a vector condition is not supported (use xt.where)", op)
        then_bb, else_bb, merge = (b.append_basic_block(n) for n in ("if.then", "if.else", "if.end"))
        b.cbranch(cond, then_bb, else_bb)
        arms = []
        for bb, region in ((then_bb, op.true_region), (else_bb, op.false_region)):
            b.position_at_end(bb)
            yielded = (self.block(region.block) or []) if region.blocks else []
            arms.append((yielded, b.block))
            b.branch(merge)
        b.position_at_end(merge)
        flat = [([v for y in yielded for v in flatten(y)], block) for yielded, block in arms]
        phis = []
        for i, v in enumerate(flat[0][0]):
            phi = b.phi(v.type)
            for values, block in flat:
                phi.add_incoming(values[i], block)
            phis.append(phi)
        for res, like in zip(op.results, arms[0][0]):
            self.values[res] = rebuild(like, phis)

    def _element_address(self, op):
        mem = self.values[op.memref]
        if not isinstance(mem, Mem):
            raise LoweringError("nvptx: element access to a non-array value", op)
        strides = mem.strides or (mem.stride, ir.Constant(I64, 1))
        index = None
        for i, s in zip(op.indices, strides[-len(op.indices):]):
            term = self.b.mul(self.values[i], s)
            index = term if index is None else self.b.add(index, term)
        return self.b.gep(mem.ptr, [index], source_etype=llvm_type(mem.elem)), llvm_type(mem.elem)

    def memref_load(self, op) -> None:
        """``x[i, j]``: one element (the same address in every lane)."""
        ptr, t = self._element_address(op)
        # an element of an array is aligned to its size (without this LLVM's NVPTX data
        # layout takes 4 for i64 and splits a table's 64-bit fields into two 32-bit loads)
        self.values[op.res] = self.b.load(ptr, typ=t, align=_element_bytes(t))

    def memref_store(self, op) -> None:
        """``x[i, j] = v``: one element, written by lane 0."""
        ptr, t = self._element_address(op)
        with self.b.if_then(warp_ops.is_first_lane(self.b, self.lane)):
            self.b.store(self.values[op.value], ptr, align=_element_bytes(t))


@dataclass
class IndexRange:
    """An integer tile value whose slots are ``base + d`` (the same ``base`` in each slot
    of a thread, ``d`` the slot's constant ``offsets``): ``xt.arange`` plus scalars."""

    base: ir.Value
    offsets: tuple


@dataclass
class Bounded:
    """A compare ``range < bound`` (``<=`` where ``inclusive``), signed, against a scalar."""

    range: IndexRange
    bound: ir.Value
    inclusive: bool = False

    def all_true(self, b: ir.IRBuilder) -> ir.Value:
        """Whether it holds in every slot of this thread: ``base < bound`` and ``hi <
        bound - base`` (``<=`` where inclusive), the difference unsigned (exact once
        ``base < bound``); with ``lo >= 0`` no slot's ``base + d`` then wraps.  False
        where some offset is negative (the caller then selects slot by slot)."""
        r = self.range
        if min(r.offsets) < 0 or self.bound.type != r.base.type:
            return ir.Constant(ir.IntType(1), 0)
        below = b.icmp_signed("<=" if self.inclusive else "<", r.base, self.bound)
        room = b.sub(self.bound, r.base)
        fits = b.icmp_unsigned(">=" if self.inclusive else ">", room, ir.Constant(r.base.type, max(r.offsets)))
        return b.and_(below, fits)

    def slots(self, b: ir.IRBuilder) -> list:
        """The compare of each slot, ``base + d < bound`` as the op wrote it, from a copy of
        ``base`` made here (a volatile ``mov``): two selects on one bound would otherwise
        share their ``base + d`` (LLVM's PRE computes them once, before the first), keeping
        every slot's index live across the in-bounds path between them."""
        t = self.range.base.type
        reg = {16: "h", 32: "r", 64: "l"}[t.width]
        base = b.asm(ir.FunctionType(t, [t]), f"mov.b{t.width} $0, $1;", f"={reg},{reg}", [self.range.base], True)
        return [b.icmp_signed("<=" if self.inclusive else "<", b.add(base, ir.Constant(t, d)) if d else base,
                              self.bound) for d in self.range.offsets]


def _uniform(v):
    """The one LLVM value every slot of ``v`` holds (a scalar, or a broadcast of one), else None."""
    if isinstance(v, Vec):
        return v.slots[0] if v.slots and all(s is v.slots[0] for s in v.slots) else None
    return v if isinstance(v, ir.Value) else None


@dataclass
class Scattered:
    """A scattered tile: its array and the element index of each slot (a vector value)."""

    mem: Mem
    indices: Vec


def _in_loop(op) -> bool:
    """Whether ``op`` lies inside an ``scf.for`` or ``scf.while`` (it may run again)."""
    parent = op.parent_op()
    while parent is not None:
        if parent.name in ("scf.for", "scf.while"):
            return True
        parent = parent.parent_op()
    return False


def _element_bytes(t: ir.Type) -> int:
    width = t.width if isinstance(t, ir.IntType) else {"float": 32, "double": 64, "half": 16, "bfloat": 16}.get(str(t), 8)
    return max(1, width // 8)


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
    "xetile.tile_mma": KernelEmitter.tile_mma, "scf.for": KernelEmitter.scf_for, "scf.while": KernelEmitter.scf_while,
    "xetile.tile_transpose": KernelEmitter.tile_transpose, "scf.if": KernelEmitter.scf_if,
    "xetile.load_gather": KernelEmitter.load_gather, "xetile.store_scatter": KernelEmitter.store_scatter,
    "memref.load": KernelEmitter.memref_load, "memref.store": KernelEmitter.memref_store,
    # a cache hint: the first slice's per-lane loads go through L1/L2 without it
    "xetile.prefetch_tile": lambda self, op: None,
    # workgroup-level kernels after the distribution pass: warps, shared local memory, barriers
    "gpu.subgroup_id": KernelEmitter.subgroup_id, "memref.alloc": KernelEmitter.slm_alloc,
    "gpu.barrier": KernelEmitter.barrier, "xegpu.alloc_nbarrier": KernelEmitter.named_barrier,
    "xegpu.init_nbarrier": KernelEmitter.named_barrier, "xegpu.nbarrier_arrive": KernelEmitter.named_barrier,
    "xegpu.nbarrier_wait": KernelEmitter.named_barrier,
    # atomics and the fence (codegen/nvptx/atomic_memory.py)
    "xetile.atomic_rmw": atomic_memory.tile_rmw, "xetile.atomic_rmw_scalar": atomic_memory.scalar,
    "xetile.atomic_cas_scalar": atomic_memory.scalar, "xetile.fence": atomic_memory.fence,
}


def subgroups_of(func) -> int:
    """The subgroups a workgroup-level kernel's program holds (1: a subgroup-level kernel)."""
    attr = func.attributes.get("xetile.num_subgroups")
    return int(attr.value.data) if attr is not None else 1
