"""Codegen: per-lane (SIMT) XeGPU IR -> LLVM IR (llvmlite) for the SPIR-V backend.

One kernel function per func.func, ``spir_kernel`` with the subgroup size pinned.
Array parameters follow :mod:`xetile_dsl.runtime.abi` (pointer, extents, outer strides).
Each op goes to the one emitter registered for its class in
:data:`~xetile_dsl.codegen.emit.EMITTERS` (the modules of ``emit/``, all imported here).
GPU-only operations go through :class:`~.builtins.intel.IntelBuiltins`, which declares
them for a GPU or defines them from their specifications for the CPU device; this module
never knows which.
"""
from __future__ import annotations

from dataclasses import replace

from llvmlite import ir
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from ..dialects import xegpu
from ..dialects.attributes import LARGE_GRF_ATTR, NUM_SUBGROUPS_ATTR
from ..dialects.types import type_name
from ..dialects.walk import ops_in
from ..errors import LoweringError
from ..lowering.analysis.families import Families
from ..runtime.abi import ArrayParam, KernelABI, ScalarParam
from ..targets import Target
from ..targets.slm_budget import SlmBudget
from . import coordinates, latch_order
from .builtins.intel import IntelBuiltins
# every emitter module, imported for its registrations in EMITTERS
from .emit import (EMITTERS, a_from_c, atomic_messages, control_flow, lane_transpose, mma, nbarrier, nd_ops,  # noqa: F401
                   opencl_builtin_calls, prefetch_payloads, scalar_ops, scattered_ops, transposed_payloads, vector_ops)
from .llvm_types import llvm_scalar
from .spirv.backend import SPIRV_DATALAYOUT, SPIRV_TRIPLE

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
GLOBAL_PTR = ir.PointerType(addrspace=1)


def generate(module: ModuleOp, target: Target, emulate: bool,
             per_lane_arrays: frozenset[str] = frozenset()) -> tuple[str, KernelABI]:
    """LLVM IR text for the one kernel in ``module`` and its launch ABI.

    ``per_lane_arrays`` names the array parameters whose rows are narrower than 2D block
    messages allow (known at launch): their tiles are read and written with per-lane
    loads and stores instead (docs/decisions/018-per-lane-specialisation.md)."""
    kernels = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(kernels) != 1:
        raise LoweringError(f"codegen expects one kernel per module, got {len(kernels)}")
    llmod = ir.Module(name=kernels[0].sym_name.data)
    llmod.triple, llmod.data_layout = SPIRV_TRIPLE, SPIRV_DATALAYOUT
    gen = KernelGen(llmod, target, IntelBuiltins(llmod, target, emulate), per_lane_arrays)
    abi = gen.kernel(kernels[0])
    return str(llmod), abi


class KernelGen:
    """The state of one kernel's codegen, which every emitter (``gen``) writes through: the
    LLVM builder ``b``, the IR value -> LLVM value map (``values``, ``v``), the memrefs'
    pointers, extents and strides, the builtins ``lib`` and the target."""

    def __init__(self, llmod: ir.Module, target: Target, lib: IntelBuiltins, per_lane_arrays=frozenset()):
        self.llmod, self.target, self.lib = llmod, target, lib
        self.per_lane_arrays = frozenset(per_lane_arrays)
        self.values: dict[SSAValue, object] = {}
        self.b: ir.IRBuilder | None = None
        self.memrefs: dict[SSAValue, tuple[ir.Value, list[ir.Value], list[ir.Value]]] = {}
        self.slm = SlmBudget(target)  # the module-scope SLM buffers (codegen/emit/slm.py)
        #: prefetches whose address payload was made before their loop (emit/prefetch_payloads.py)
        self.hoisted_prefetches: dict[Operation, prefetch_payloads.HoistedPrefetch] = {}
        #: transposed reads whose address payload was made before their loop (emit/transposed_payloads.py)
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
        n_sg = fn.attributes.get(NUM_SUBGROUPS_ATTR)
        self.workgroup_subgroups = n_sg.value.data if n_sg is not None else 1
        self._find_desc_sources(fn)
        self.wide_offsets = coordinates.has_wide_offsets(fn)
        for op in fn.body.block.ops:
            self.op(op)
        nbarrier.finish(self)
        if self.target.order_loop_latches:
            latch_order.order_latches(kfn)
        params = self._mark_block2d(fn, params)
        large_grf = LARGE_GRF_ATTR in fn.attributes
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
        self.desc_source = {self.families.find(op.tensor_desc): _array_of(op.source)
                            for op in ops_in(fn) if isinstance(op, xegpu.CreateNdTdescOp)}
        self.block2d_sources: set[SSAValue] = set()

    def uses_block2d(self, tensor_desc: SSAValue) -> None:
        """Record that ``tensor_desc``'s array is accessed with a 2D block message."""
        source = self.desc_source.get(self.families.find(tensor_desc))
        if source is not None:
            self.block2d_sources.add(source)

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
        """Emit ``op`` with the emitter registered for its class."""
        emit = EMITTERS.lookup(op)
        if emit is None:
            raise LoweringError(f"codegen does not support {op.name} yet", op)
        emit(self, op)


def _array_of(source: SSAValue) -> SSAValue:
    """The array a descriptor's memref views: the N-D argument under a 2-D slice of it
    (a ``memref.reinterpret_cast`` with runtime offset; frontend/array_views.py), else
    ``source`` itself."""
    owner = source.owner
    while isinstance(owner, memref.ReinterpretCastOp) and isinstance(owner.source.type, MemRefType) \
            and (owner.offsets or owner.sizes or owner.strides):
        source = owner.source
        owner = source.owner
    return source
