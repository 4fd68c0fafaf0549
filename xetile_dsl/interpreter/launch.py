"""Running XeTile IR: a module on a grid (:func:`interpret`) and a ``@jit`` kernel launch
(:func:`launch_jit`, what ``XETILE_INTERPRET=1`` and ``kernel.on("interpret")`` use).

Programs run one after another, ``program_id`` x fastest, then y, then z; each program
is one workgroup executing the kernel body once: a subgroup-level kernel (no ``wg_map``)
is one subgroup per workgroup, a workgroup-level kernel runs its ops on whole
workgroup tiles.  Numpy arrays are written in place.
"""
from __future__ import annotations

import os
import weakref

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from ..dialects.xetile import TileType, WgMapAttr
from ..targets import get_target
from . import ops_arith, ops_std, ops_xetile  # noqa: F401 - register the op implementations
from .core import Launch, Run
from .memory import Memory
from .values import InterpreterError, make

#: JITFunction -> {specialisation key: (module, ABI used for the argument checks)}
_MODULES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def interpret_requested() -> bool:
    """True when ``XETILE_INTERPRET`` asks every launch to run in the interpreter."""
    return os.environ.get("XETILE_INTERPRET", "") not in ("", "0")


def kernel_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The kernel of ``module``: the function named ``name``, else the one marked
    ``xetile.kernel``, else the only function."""
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    if name is not None:
        funcs = [f for f in funcs if f.sym_name.data == name]
    marked = [f for f in funcs if "xetile.kernel" in f.attributes]
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


def interpret(module: ModuleOp, grid, args, kernel: str | None = None) -> None:
    """Run the kernel of ``module`` on ``grid`` (1 to 3 ints) with ``args``: numpy arrays
    for memref parameters (C-contiguous; written in place), Python numbers for scalars."""
    from ..runtime.launcher import normalize_grid

    grid3 = normalize_grid(grid)
    fn = kernel_function(module, kernel)
    params = fn.body.blocks.first.args
    if len(args) != len(params):
        raise InterpreterError(f"kernel @{fn.sym_name.data} takes {len(params)} argument(s), got {len(args)}")
    memory = Memory()
    values = [_argument(memory, p, a, i) for i, (p, a) in enumerate(zip(params, args))]
    n_sg = workgroup_subgroups(fn)
    flavour = fn.attributes.get("xetile.kernel")
    sg_size = get_target(flavour.data if flavour is not None else "pvc").subgroup_size
    launch = Launch(grid3, memory, module, workgroup_level=_has_wg_map(fn), num_subgroups=n_sg,
                    subgroup_size=sg_size)
    for z in range(grid3[2]):
        for y in range(grid3[1]):
            for x in range(grid3[0]):
                Run(launch, (x, y, z)).region(fn.body, values)


def _has_wg_map(fn: func.FuncOp) -> bool:
    """True for workgroup-level IR: some op or tile carries a wg_map."""
    return any(isinstance(v, WgMapAttr) for op in fn.walk() for v in op.properties.values()) or any(
        isinstance(r.type, TileType) and r.type.attr.wg is not None for op in fn.walk() for r in op.results)


def _argument(memory: Memory, param, value, position: int):
    if isinstance(param.type, MemRefType):
        if not isinstance(value, np.ndarray):
            raise InterpreterError(f"argument {position}: expected a numpy array for {param.type}, "
                                   f"got {type(value).__name__}")
        return memory.add_array(param.name_hint or f"arg{position}", value)
    return make(value, param.type)


# ----------------------------------------------------------------------------- @jit launches
def launch_jit(jit, grid, args: tuple, kwargs: dict) -> None:
    """``kernel[grid](*args, **kwargs)`` in the interpreter: the same binding, argument
    checks and grid function as a compiled launch, then :func:`interpret`."""
    from ..runtime.launcher import normalize_grid

    runtime, specs, constants = jit.bind(args, kwargs)
    module, abi = _module_for(jit, specs, constants)
    grid = grid(dict(constants)) if callable(grid) else grid
    normalize_grid(grid)
    for handler, value in zip(_handlers(abi), runtime):
        handler.check(value) if hasattr(handler, "check") else handler.convert(value)
    interpret(module, grid, runtime)


def _handlers(abi):
    from ..runtime.launcher import _ArrayHandler, _ScalarHandler  # noqa: PLC2701 - the launcher's own checks

    return [_ArrayHandler(i, p, abi) if p.kind == "array" else _ScalarHandler(i, p) for i, p in enumerate(abi.params)]


def _module_for(jit, specs: dict, constants: dict):
    """The kernel's XeTile module (built by the frontend, cached per specialisation)."""
    flavour = os.environ.get("XETILE_CPU_FLAVOUR", "pvc")
    key = jit.cache_key(specs, constants, f"interpret-{flavour}")
    cache = _MODULES.setdefault(jit, {})
    if key not in cache:
        cache[key] = build_module(jit.fn, specs, constants, flavour)
    return cache[key]


def build_module(fn, specs: dict, constants: dict, flavour: str = "pvc"):
    """(XeTile module, ABI for argument checks) of ``fn`` specialised as given; frontend
    errors are the usual CompilationErrors."""
    from ..frontend import build_module as frontend_module
    from ..frontend.source import KernelSource
    from ..runtime.abi import ArrayParam, KernelABI, ScalarParam

    src = KernelSource.of(fn)
    module, written = frontend_module(fn, specs, constants, get_target(flavour))
    params = tuple(ArrayParam(n, s.dtype, s.ndim, written="*" in written or n in written) if s.kind == "array"
                   else ScalarParam(n, s.dtype) for n, s in specs.items())
    return module, KernelABI(src.name, params)
