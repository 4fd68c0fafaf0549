"""Running XeTile IR: a module on a grid (:func:`interpret`) and a ``@jit`` kernel launch
(:func:`launch_jit`, what ``XETILE_INTERPRET=1`` and ``kernel.on("interpret")`` use).

Workgroups run one after another, ``program_id`` x fastest, then y, then z; those of a
kernel with atomics interleave at every atomic (:mod:`.programs`; in whole-tile mode).  A
workgroup-level kernel (with ``wg_map``) runs in one of two modes:

* whole-tile (the fast default): the workgroup is one program whose ops act on whole
  workgroup tiles;
* per-subgroup: the kernel is first distributed by the compiler's own ``xetile-wg-to-sg``
  pass, then each of the workgroup's subgroups runs that subgroup-level program
  (:mod:`.subgroups`: shared SLM, barriers).  Chosen by ``subgroups=True``,
  ``XETILE_INTERPRET=subgroups``, ``kernel.on("interpret-subgroups")``, and automatically
  for a workgroup-level kernel that asks for its ``subgroup_id``.

A subgroup-level kernel (no ``wg_map``) is one subgroup per workgroup in both modes.
Numpy arrays are written in place.
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np
from xdsl.dialects import func, gpu
from xdsl.dialects.builtin import MemRefType, ModuleOp

from .. import knobs
from ..dialects import make_context
from ..dialects import xetile
from ..dialects.attributes import KERNEL_ATTR, NUM_SUBGROUPS_ATTR
from ..dialects.xetile import TileType, WgMapAttr
from ..errors import CompilationWarning, LoweringError
from ..frontend.build import build_module as frontend_module
from ..frontend.source import KernelSource, at_user_line
from ..launch_options import (barrier_refusal, check_for_target, check_num_subgroups, launch_grid, one_working_subgroup_message,
                              split_options)
from ..lowering.analysis import mma_shapes
from ..lowering.passes.wg_to_sg import XeTileWgToSg
from ..lowering.rewrites import scattered
from ..runtime.abi import ArrayParam, KernelABI, ScalarParam
from ..runtime.array_tables import ArrayTable, TableMeta, host_entries, table_meta, write_back
from ..runtime.arrays import from_host, is_device_array_type, to_host
from ..runtime.arguments import argument_handlers
from ..runtime.grids import normalize_grid
from ..targets import cpu_device, get_target
from . import ops_arith, ops_atomic, ops_std, ops_xetile  # noqa: F401 - register the op implementations
from .engine import Launch, Run
from .memory import Memory
from .programs import Programs, uses_atomics
from .subgroups import Workgroup
from .values import InterpreterError, make

#: JITFunction -> {specialisation key: (module, ABI used for the argument checks)}
_MODULES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


#: the launch targets that run the interpreter instead of compiling
def kernel_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The kernel of ``module``: the function named ``name``, else the one marked
    ``xetile.kernel``, else the only function."""
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    if name is not None:
        funcs = [f for f in funcs if f.sym_name.data == name]
    marked = [f for f in funcs if KERNEL_ATTR in f.attributes]
    picked = marked or funcs
    if len(picked) != 1:
        raise InterpreterError(f"expected one kernel function in the module, found {len(picked)}"
                               + (f" named {name!r}" if name else "; pass kernel=NAME"))
    return picked[0]


def workgroup_subgroups(fn: func.FuncOp) -> int:
    """Subgroups per workgroup: the product of ``sg_layout`` of the kernel's wg_maps
    (1 for a subgroup-level kernel)."""
    for op in fn.walk():
        maps = [v for v in op.properties.values() if isinstance(v, WgMapAttr)]
        maps += [r.type.attr.wg for r in op.results if isinstance(r.type, TileType) and r.type.attr.wg]
        if maps:
            return int(np.prod(maps[0].layout))
    return 1


def interpret(module: ModuleOp, grid, args, kernel: str | None = None, subgroups: bool | None = None) -> None:
    """Run the kernel of ``module`` on ``grid`` (1 to 3 ints) with ``args``: numpy arrays
    for memref parameters (C-contiguous or strided views; written in place), Python numbers for scalars.

    ``subgroups`` picks the mode of a workgroup-level kernel: True runs each subgroup
    (after ``xetile-wg-to-sg``), False whole workgroup tiles, None follows
    ``XETILE_INTERPRET`` (``subgroups``) and otherwise runs per subgroup only kernels that
    use ``gpu.subgroup_id``.  The pass's errors (an unsupported distribution) are raised
    as they are, a :class:`~xetile_dsl.errors.LoweringError`."""
    grid3 = normalize_grid(grid)
    fn = kernel_function(module, kernel)
    params = fn.body.blocks.first.args
    if len(args) != len(params):
        raise InterpreterError(f"kernel @{fn.sym_name.data} takes {len(params)} argument(s), got {len(args)}")
    memory = Memory()
    values = [_argument(memory, p, a, i) for i, (p, a) in enumerate(zip(params, args))]
    flavour = _flavour(fn)
    sg_size = get_target(flavour).subgroup_size
    if per_subgroup_mode(fn, subgroups):
        module, fn = subgroup_program(module, fn, flavour)
        launch = Launch(grid3, memory, module, num_subgroups=_num_subgroups_attr(fn), subgroup_size=sg_size)
        for program_id in _programs(grid3):
            _run_workgroup(launch, program_id, fn, values)
        return
    launch = Launch(grid3, memory, module, workgroup_level=_has_wg_map(fn), num_subgroups=workgroup_subgroups(fn),
                    subgroup_size=sg_size)
    if uses_atomics(fn, (xetile.AtomicRMWOp, *xetile.ATOMIC_OPS)):  # programs interleave at atomics
        launch.programs = Programs()
        launch.programs.run(list(_programs(grid3)), lambda pid: Run(launch, pid).region(fn.body, values))
        return
    for program_id in _programs(grid3):
        Run(launch, program_id).region(fn.body, values)


def _programs(grid3):
    """Program ids in launch order: x fastest, then y, then z."""
    for z in range(grid3[2]):
        for y in range(grid3[1]):
            for x in range(grid3[0]):
                yield (x, y, z)


def _run_workgroup(launch: Launch, program_id, fn: func.FuncOp, values: list) -> None:
    """One workgroup as ``launch.num_subgroups`` cooperatively scheduled subgroups."""
    workgroup = Workgroup(launch.num_subgroups)
    workgroup.run(lambda sg: Run(launch, program_id, workgroup=workgroup, subgroup=sg).region(fn.body, values))


def _flavour(fn: func.FuncOp) -> str:
    """The GPU flavour the frontend built the kernel for (pvc for hand-written MLIR)."""
    flavour = fn.attributes.get(KERNEL_ATTR)
    return flavour.data if flavour is not None and hasattr(flavour, "data") else "pvc"


def per_subgroup_mode(fn: func.FuncOp, subgroups: bool | None) -> bool:
    """True when the launch runs each subgroup of a workgroup (see :func:`interpret`)."""
    if subgroups is not None:
        return bool(subgroups)
    if knobs.interpret_mode() == "subgroups":
        return True
    return _has_wg_map(fn) and any(isinstance(op, gpu.SubgroupIdOp) for op in fn.walk())


def subgroup_program(module: ModuleOp, fn: func.FuncOp, flavour: str) -> tuple[ModuleOp, func.FuncOp]:
    """A copy of ``module`` distributed among subgroups by ``xetile-wg-to-sg`` (the
    compiler's pass, so the interpreter checks it) and its kernel function."""
    copy = module.clone()
    XeTileWgToSg(target=flavour).apply(make_context(), copy)
    return copy, kernel_function(copy, fn.sym_name.data)


def _num_subgroups_attr(fn: func.FuncOp) -> int:
    """Subgroups per workgroup the pass chose (1 for a subgroup-level kernel)."""
    attr = fn.attributes.get(NUM_SUBGROUPS_ATTR)
    return int(attr.value.data) if attr is not None else 1


def _has_wg_map(fn: func.FuncOp) -> bool:
    """True for workgroup-level IR: some op or tile carries a wg_map."""
    return any(isinstance(v, WgMapAttr) for op in fn.walk() for v in op.properties.values()) or any(
        isinstance(r.type, TileType) and r.type.attr.wg is not None for op in fn.walk() for r in op.results)


def _argument(memory: Memory, param, value, position: int):
    if isinstance(param.type, MemRefType):
        if not isinstance(value, np.ndarray):
            raise InterpreterError(f"argument {position}: expected a numpy array for {param.type}, "
                                   f"got {type(value).__name__}")
        if value.__class__ is TableMeta:   # an array table: list the entries' addresses here
            _list_entries(memory, param.name_hint or f"arg{position}", value)
        return memory.add_array(param.name_hint or f"arg{position}", value)
    return make(value, param.type)


def _list_entries(memory: Memory, name: str, meta: TableMeta) -> None:
    """Each entry of an array table becomes an allocation; its row of ``meta`` lists
    the allocation's byte address (runtime/array_tables.py: the fields of a row)."""
    for i, entry in enumerate(meta.entries):
        ref = memory.add_array(f"{name}[{i}]", entry)
        meta[i, 0] = ref.alloc.address + ref.offset * entry.itemsize


# ----------------------------------------------------------------------------- @jit launches
def launch_jit(jit, grid, args: tuple, kwargs: dict, subgroups: bool | None = None) -> None:
    """``kernel[grid](*args, **kwargs)`` in the interpreter: the same binding, argument
    checks and grid function as a compiled launch, then :func:`interpret` (``subgroups``
    as there).  A workgroup distribution the compiler rejects is the compiler's
    CompilationError at the user's line."""
    kwargs, options = split_options(kwargs, jit.signature.parameters)
    runtime, specs, constants = jit.bind(args, kwargs)
    flavour = get_target(cpu_device.flavour())
    check_for_target(jit.__name__, options, "interpret", flavour.subgroup_size, flavour.max_workgroup_size)
    module, abi = _module_for(jit, specs, constants)
    # num_stages moves prefetches only, which the interpreter runs as no-ops
    _check_subgroup_count(jit, options, kernel_function(module))
    grid = launch_grid(jit.__name__, grid, dict(zip(specs, runtime)), constants)
    normalize_grid(grid)
    for handler, value in zip(argument_handlers(abi), runtime):
        if value.__class__ is not ArrayTable:   # a table's entries were checked by xd.array_table
            handler.check(value) if hasattr(handler, "check") else handler.convert(value)
    hosts = [_host_view(value) for value in runtime]
    try:
        interpret(module, grid, hosts, subgroups=subgroups)
    except LoweringError as exc:
        raise at_user_line(KernelSource.of(jit.fn), exc) from None
    for param, value, host in zip(abi.params, runtime, hosts):
        if value.__class__ is ArrayTable:
            write_back(value, host.entries)   # device entries: their host copies (numpy ones are written in place)
        elif host is not value and getattr(param, "written", False):
            from_host(value, host)


def _check_subgroup_count(jit, options, fn: func.FuncOp) -> None:
    """The compiled flavours' rule for ``num_warps``: a kernel with wg_maps must match it; one
    without runs in subgroup 0 of that many (pass xetile-one-working-subgroup), which the
    interpreter's one program per workgroup already is: the same warning, the same result."""
    count = options.num_warps
    if count is not None and count > 1 and not _has_wg_map(fn):
        if any(isinstance(op, gpu.BarrierOp) for op in fn.walk()):
            raise barrier_refusal(jit.__name__, count, options.spelled)
        src = KernelSource.of(jit.fn)
        located = src.error(src.tree, one_working_subgroup_message(jit.__name__, count, options.spelled))
        warnings.warn(CompilationWarning.at(located), stacklevel=4)
        return
    check_num_subgroups(jit.__name__, count, workgroup_subgroups(fn), options.spelled)


def _host_view(value):
    """``value`` itself, or for a device array (dpnp/USM, torch XPU, pyopencl) a numpy copy
    taken after the work already queued on it (its queue is in order), so that the
    interpreter runs on the same data a compiled launch would see."""
    if value.__class__ is ArrayTable:   # its device table; interpret() lists the addresses
        return table_meta(value, host_entries(value), [0] * len(value))
    if value.__class__ is np.ndarray or not is_device_array_type(value.__class__):
        return value
    return to_host(value)


def _module_for(jit, specs: dict, constants: dict):
    """The kernel's XeTile module (built by the frontend, cached per specialisation)."""
    flavour = cpu_device.flavour()
    key = jit.cache_key(specs, constants, f"interpret-{flavour}")
    cache = _MODULES.setdefault(jit, {})
    if key not in cache:
        cache[key] = build_module(jit.fn, specs, constants, flavour)
    return cache[key]


def build_module(fn, specs: dict, constants: dict, flavour: str = "pvc"):
    """(XeTile module, ABI for argument checks) of ``fn`` specialised as given; frontend
    errors are the usual CompilationErrors."""
    src = KernelSource.of(fn)
    module, written = frontend_module(fn, specs, constants, get_target(flavour))
    try:
        check_tile_mma_shapes(module, flavour)
    except LoweringError as exc:
        raise at_user_line(src, exc) from None
    params = tuple(ArrayParam(n, s.dtype, s.ndim, written="*" in written or n in written) if s.kind == "array"
                   else ArrayParam(n, "i64", 2, written=False) if s.kind == "table"   # its device table
                   else ScalarParam(n, s.dtype) for n, s in specs.items())
    return module, KernelABI(src.name, params)


def check_tile_mma_shapes(module: ModuleOp, flavour: str) -> None:
    """The compiler's rule for tile_mma operand shapes (lowering/analysis/mma_shapes.py) and for
    the lanes of scattered tiles (lowering/rewrites/scattered.py), so that
    the interpreter refuses what the compiler refuses: checked on the subgroup program a
    workgroup-level kernel is distributed into (the tiles the compiler blocks)."""
    fn = kernel_function(module)
    if _has_wg_map(fn):
        module, fn = subgroup_program(module, fn, flavour)
    target = get_target(flavour)
    for op in fn.walk():
        if isinstance(op, xetile.TileMMAOp):
            mma_shapes.check_tile_mma(op, target)
        elif isinstance(op, scattered.SCATTER_OPS) and scattered.is_scattered(op.tile.type):
            scattered.check_shape(op.tile.type, target.subgroup_size, op)  # the lanes of a scattered tile
