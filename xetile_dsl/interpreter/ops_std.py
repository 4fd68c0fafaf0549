"""scf, func, gpu, memref and vector ops, XeGPU named barriers, and ``xtdebug.print``."""
from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, gpu, memref, scf, vector
from xdsl.dialects.builtin import MemRefType, VectorType

from ..dialects import xegpu, xetile, xtdebug
from ..dialects._vector_ops import (ExtractStridedSliceOp, InsertStridedSliceOp, MultiReductionOp, ShapeCastOp,
                                    TransposeOp)
from ..dtypes import numpy_kind
from .engine import Run, impl, prop
from .memory import ArrayRef
from .ops_arith import result_dtype
from .ops_xetile import reduce_kind
from .values import InterpreterError, cast, make, np_dtype


# ----------------------------------------------------------------------------- scf / func
@impl(scf.ForOp)
def _for(run: Run, op, lb, ub, step, *inits):
    if int(step) <= 0:
        raise InterpreterError(f"scf.for: step must be positive, got {int(step)}")
    carried = list(inits)
    iv_type = op.lb.type
    for i in range(int(lb), int(ub), int(step)):
        _, carried = run.region(op.body, [make(i, iv_type), *carried])
    return list(carried)


@impl(scf.IfOp)
def _if(run: Run, op, cond):
    region = op.true_region if bool(cond) else op.false_region
    _, values = run.region(region, [])
    return list(values)


@impl(scf.WhileOp)
def _while(run: Run, op, *inits):
    values = list(inits)
    while True:
        _, cond_values = run.region(op.before_region, values)
        cond, forwarded = cond_values[0], cond_values[1:]
        if not bool(cond):
            return list(forwarded)
        _, values = run.region(op.after_region, forwarded)


@impl(scf.ExecuteRegionOp)
def _execute_region(run: Run, op):
    _, values = run.region(op.regions[0], [])
    return list(values)


@impl(func.CallOp)
def _call(run: Run, op, *args):
    callee = op.callee.root_reference.data
    target = next((f for f in run.launch.module.walk() if isinstance(f, func.FuncOp) and f.sym_name.data == callee),
                  None)
    if target is None:
        raise InterpreterError(f"func.call: no function @{callee} in the module")
    inner = Run(run.launch, run.program_id, workgroup=run.workgroup, subgroup=run.subgroup, slm=run.slm)
    _, values = inner.region(target.body, list(args))
    return list(values)


# ----------------------------------------------------------------------------- gpu
_DIM = {"x": 0, "y": 1, "z": 2}


def _dim(op) -> int:
    return _DIM[op.dimension.data.value]


@impl(gpu.BlockIdOp)
def _block_id(run: Run, op):
    return np.int64(run.program_id[_dim(op)])


@impl(gpu.GridDimOp)
def _grid_dim(run: Run, op):
    return np.int64(run.launch.grid[_dim(op)])


@impl(gpu.SubgroupIdOp)
def _subgroup_id(run: Run, op):
    if run.workgroup is not None:
        return np.int64(run.subgroup)
    if run.launch.workgroup_level:
        raise InterpreterError("xt.subgroup_id() in a workgroup-level kernel (one with wg_map) needs the per-subgroup "
                               "interpreter: whole-tile mode runs wg_map ops on whole workgroup tiles, so there is no "
                               "current subgroup. Launch with .on(\"interpret-subgroups\") or "
                               "XETILE_INTERPRET=subgroups (the default mode picks it for such kernels)")
    return np.int64(0)


@impl(gpu.NumSubgroupsOp)
def _num_subgroups(run: Run, op):
    return np.int64(run.launch.num_subgroups)


@impl(gpu.SubgroupSizeOp)
def _subgroup_size(run: Run, op):
    return np.int64(run.launch.subgroup_size)


@impl(gpu.BlockDimOp)
def _block_dim(run: Run, op):
    return np.int64(run.launch.subgroup_size * run.launch.num_subgroups if _dim(op) == 0 else 1)


@impl(gpu.BarrierOp)
def _barrier(run: Run, op):
    """Per-subgroup execution waits for the workgroup's other subgroups; a program that is
    the whole workgroup has nothing to wait for."""
    if run.workgroup is not None:
        run.workgroup.barrier(run.subgroup, op)


@dataclass(frozen=True)
class NamedBarrier:
    """The value of ``xegpu.init_nbarrier``: barrier ``nb_id`` with ``count`` participants."""

    nb_id: int
    count: int


@impl(xegpu.AllocNbarrierOp)
def _alloc_nbarrier(run: Run, op, *count):
    """Named barriers need no allocation in the interpreter (init_nbarrier names them)."""
    return None


@impl(xegpu.InitNbarrierOp)
def _init_nbarrier(run: Run, op, nb_id, count):
    return NamedBarrier(int(nb_id), int(count))


@impl(xegpu.NbarrierArriveOp)
def _nbarrier_arrive(run: Run, op, barrier: NamedBarrier):
    if run.workgroup is not None:
        run.workgroup.nbarrier_arrive(run.subgroup, barrier.nb_id, barrier.count, op)


@impl(xegpu.NbarrierWaitOp)
def _nbarrier_wait(run: Run, op, barrier: NamedBarrier):
    """Waits for the barrier's participants only (per-subgroup execution); a program that
    is the whole workgroup has nothing to wait for."""
    if run.workgroup is not None:
        run.workgroup.nbarrier_wait(run.subgroup, barrier.nb_id, op)


@impl(xetile.PrefetchTileOp, memref.DeallocOp, memref.AssumeAlignmentOp)
def _no_op(run: Run, op, *args):
    """Prefetch is a cache hint; deallocation and alignment facts change no value."""
    return None


# ----------------------------------------------------------------------------- memref
@impl(memref.ExtractStridedMetaDataOp)
def _metadata(run: Run, op, ref: ArrayRef):
    base = ArrayRef(ref.alloc, 0, (), ())
    return (base, np.int64(ref.offset), *map(np.int64, ref.sizes), *map(np.int64, ref.strides))


@impl(memref.ExtractAlignedPointerAsIndexOp)
def _pointer(run: Run, op, ref: ArrayRef):
    return np.int64(ref.alloc.address)


@impl(memref.DimOp)
def _dim_of(run: Run, op, ref: ArrayRef, index):
    return np.int64(ref.sizes[int(index)])


@impl(memref.CastOp, memref.MemorySpaceCastOp)
def _memref_cast(run: Run, op, ref: ArrayRef):
    return ref


@impl(memref.ReinterpretCastOp)
def _reinterpret_cast(run: Run, op, ref: ArrayRef, *dynamic):
    """The same allocation seen with the op's offset, sizes and strides (elements; the
    offset counts from the allocation's start, as MLIR's from the base pointer): e.g. the
    column-major SLM view of a workgroup transpose (lowering/passes/wg_to_sg/transpose.py)."""
    dyn = iter(int(v) for v in dynamic)

    def resolved(static) -> tuple[int, ...]:
        return tuple(next(dyn) if v < -(2**62) else v for v in (int(x) for x in static.get_values()))

    offset = resolved(op.static_offsets)
    sizes, strides = resolved(op.static_sizes), resolved(op.static_strides)
    return ArrayRef(ref.alloc, offset[0] if offset else 0, sizes, strides)


@impl(memref.AllocOp, memref.AllocaOp)
def _alloc(run: Run, op, *dyn_sizes):
    """A fresh zero-filled buffer; a shared-local-memory buffer (memory space 3, e.g.
    ``xt.slm_alloc``) is one per workgroup and op, shared by all its subgroups in
    per-subgroup execution and kept across loop iterations (as the device's statically
    allocated SLM) in both modes."""
    t: MemRefType = op.results[0].type
    dyn = iter(int(s) for s in dyn_sizes)
    shape = [d if d >= 0 else next(dyn) for d in t.get_shape()]
    if not _is_slm(t):
        return run.memory.allocate(f"alloc@{id(op):x}", shape, np_dtype(t.element_type))
    slm = run.workgroup.slm if run.workgroup is not None else run.slm
    if id(op) not in slm:
        slm[id(op)] = run.memory.allocate(f"slm@{id(op):x}", shape, np_dtype(t.element_type))
    return slm[id(op)]


def _is_slm(t: MemRefType) -> bool:
    space = getattr(t, "memory_space", None)
    value = getattr(getattr(space, "value", None), "data", None)
    return value == 3


def _element(ref: ArrayRef, indices) -> int:
    for d, (i, n) in enumerate(zip(indices, ref.sizes)):
        if not 0 <= int(i) < n:
            raise InterpreterError(f"index {int(i)} out of bounds for dimension {d} of size {n}")
    return ref.offset + sum(int(i) * s for i, s in zip(indices, ref.strides))


@impl(memref.LoadOp)
def _mload(run: Run, op, ref: ArrayRef, *indices):
    return ref.alloc.data[_element(ref, indices)]


@impl(memref.StoreOp)
def _mstore(run: Run, op, value, ref: ArrayRef, *indices):
    ref.alloc.data[_element(ref, indices)] = value


# ----------------------------------------------------------------------------- vector
@impl(vector.BroadcastOp)
def _broadcast(run: Run, op, value):
    t: VectorType = op.results[0].type
    return np.broadcast_to(np.asarray(value, np_dtype(t.element_type)), tuple(t.get_shape())).copy()


def _positions(op, dynamic) -> list[int]:
    dyn = iter(int(v) for v in dynamic)
    return [next(dyn) if p < -(2**62) else p for p in (int(v) for v in op.static_position.get_values())]


@impl(vector.ExtractOp)
def _extract(run: Run, op, vec, *dynamic):
    out = np.asarray(vec)[tuple(_positions(op, dynamic))]
    return out.copy() if isinstance(out, np.ndarray) else out


@impl(vector.InsertOp)
def _insert(run: Run, op, value, dest, *dynamic):
    out = np.array(dest, copy=True)
    out[tuple(_positions(op, dynamic))] = value
    return out


@impl(vector.ReductionOp)
def _reduction(run: Run, op, vec, *acc):
    flags = prop(op, "kind").data
    kind_name = (next(iter(flags)) if isinstance(flags, (set, frozenset)) else flags).value
    values = np.asarray(vec).reshape(-1)
    if acc:
        values = np.concatenate([values, np.asarray(acc[0]).reshape(1)])
    return cast(reduce_kind(kind_name, values, axis=0, keepdims=False), result_dtype(op))


@impl(ShapeCastOp)
def _shape_cast(run: Run, op, vec):
    return np.asarray(vec).reshape(tuple(op.results[0].type.get_shape())).copy()


@impl(TransposeOp)
def _transpose(run: Run, op, vec):
    return np.ascontiguousarray(np.transpose(np.asarray(vec), op.perm))


@impl(ExtractStridedSliceOp)
def _extract_strided_slice(run: Run, op, vec):
    box = tuple(slice(o, o + n) for o, n in zip(op.properties["offsets"].get_values(),
                                                op.properties["sizes"].get_values()))
    return np.asarray(vec)[box].copy()


@impl(InsertStridedSliceOp)
def _insert_strided_slice(run: Run, op, value, dest):
    out = np.array(dest, copy=True)
    value = np.asarray(value)
    out[tuple(slice(o, o + n) for o, n in zip(op.properties["offsets"].get_values(), value.shape))] = value
    return out


@impl(vector.BitcastOp)
def _bitcast(run: Run, op, vec):
    t = op.results[0].type
    return np.ascontiguousarray(vec).view(np_dtype(t.element_type)).reshape(tuple(t.get_shape()))


@impl(MultiReductionOp)
def _multi_reduction(run: Run, op, vec, acc):
    kind, dims = op.kind_name, tuple(op.dims)
    reduced = reduce_kind(kind, vec, axis=dims, keepdims=False)
    reduced = np.asarray(reduced)
    both = np.stack([reduced, np.asarray(acc).astype(reduced.dtype)])  # combine before rounding once
    return cast(reduce_kind(kind, both, axis=0, keepdims=False), result_dtype(op))


# ----------------------------------------------------------------------------- xtdebug
class _Formatter(string.Formatter):
    """str.format with numpy arrays formatted element-wise by the field's spec."""

    def format_field(self, value, format_spec):
        if isinstance(value, np.ndarray) and format_spec:
            return np.array2string(value, formatter={"all": lambda x: format(x, format_spec)})
        if isinstance(value, np.generic):
            value = value.item() if numpy_kind(value.dtype) in "iub" else value
        return super().format_field(value, format_spec)


@impl(xtdebug.PrintOp)
def _print(run: Run, op, *values):
    print(_Formatter().format(op.format.data, *values), end="", flush=True)


