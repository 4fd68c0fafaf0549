"""CUDA's math library on NVIDIA targets: libdevice, the LLVM bitcode of the ``__nv_*``
functions NVIDIA ships with every CUDA toolkit (and the nvidia-cuda-nvcc wheel).

The emitter calls a function by its libdevice name (:func:`call`: ``atanf``, ``fmodf``,
``popc``); :func:`link` then links the bitcode into the kernel's module before the -O3
pipeline, with every ``__nv_*`` function made internal, so the pipeline inlines the ones
called and drops the rest; its ``__nvvm_reflect`` queries (flush-to-zero: off) are
folded by the NVPTX target's own pass.  Accuracy is libdevice's (the CUDA C
Programming Guide's tables of maximum ulp errors), not ours.

Where the file is: ``$XETILE_LIBDEVICE``, else the nvidia-cuda-nvcc wheel's, else
``$CUDA_HOME`` / ``$CUDA_PATH`` / ``/usr/local/cuda``'s ``nvvm/libdevice``, else Triton's
copy; without one, a kernel calling a libdevice function is refused at its line."""
from __future__ import annotations

import functools
import os

import llvmlite.binding as llvm
from llvmlite import ir

from ... import knobs
from ...errors import LoweringError

FILE = "libdevice.10.bc"
PREFIX = "__nv_"


@functools.lru_cache(maxsize=None)
def find() -> str | None:
    """The path of libdevice (see the module's docstring), or None."""
    given = knobs.LIBDEVICE.get()
    if given is not None:
        return str(given) if os.path.isfile(given) else None
    wheel = knobs.installed_file("nvidia.cuda_nvcc", "nvvm", "libdevice", FILE)
    if wheel:
        return wheel
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.isfile(os.path.join(home, "nvvm", "libdevice", FILE)):
            return os.path.join(home, "nvvm", "libdevice", FILE)
    return knobs.installed_file("triton", "backends", "nvidia", "lib", FILE)


@functools.lru_cache(maxsize=None)
def _bitcode(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# the LLVM types libdevice's functions take and return, by their printed names
_TYPES = {"float": ir.FloatType(), "double": ir.DoubleType(), "i16": ir.IntType(16), "i32": ir.IntType(32),
          "i64": ir.IntType(64)}


@functools.lru_cache(maxsize=None)
def signatures(path: str) -> dict:
    """The functions ``path`` defines, without the ``__nv_`` prefix, each with its LLVM
    type as printed names: ``(return, param, ...)`` (``ilogbf``: ``("i32", "float")``)."""
    module = llvm.parse_bitcode(_bitcode(path))
    return {f.name[len(PREFIX):]: tuple(str(t) for t in f.global_value_type.elements)
            for f in module.functions if f.name.startswith(PREFIX) and not f.is_declaration}


def names(path: str) -> frozenset:
    """The functions ``path`` defines, without the ``__nv_`` prefix."""
    return frozenset(signatures(path))


def has(name: str) -> bool:
    path = find()
    return path is not None and name in names(path)


def call(b: ir.IRBuilder, name: str, args: list, op=None) -> ir.Value:
    """A call of libdevice's ``__nv_<name>`` on ``args``, in the function's own type:
    arguments of another width of their kind (i32 for an i64 parameter, f32 for f64) are
    converted to it, and the result is of the type libdevice returns.  A LoweringError at
    ``op`` where there is no libdevice, it has no such function, or the function takes
    other arguments (a pointer for an out-parameter, another count or kind)."""
    path = find()
    if path is None:
        raise LoweringError(f"nvptx: {name} comes from CUDA's libdevice ({FILE}), which was not found: install "
                            f"the nvidia-cuda-nvcc wheel or a CUDA toolkit, or set $XETILE_LIBDEVICE", op)
    sig = signatures(path).get(name)
    if sig is None:
        raise LoweringError(f"nvptx: libdevice ({path}) has no function {PREFIX}{name}", op)
    ret, params = sig[0], sig[1:]
    given = [str(a.type) for a in args]
    if (len(params) != len(args) or any(t not in _TYPES for t in sig)
            or any(_kind(p) != _kind(g) for p, g in zip(params, given))):
        raise LoweringError(f"nvptx: libdevice's {PREFIX}{name} takes ({', '.join(params)}) and returns {ret}, "
                            f"not ({', '.join(given)}): only functions of integer and float values, called "
                            f"with as many values of those kinds, are available", op)
    fn = b.module.globals.get(PREFIX + name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(_TYPES[ret], [_TYPES[p] for p in params]), PREFIX + name)
    return b.call(fn, [_fit(b, a, _TYPES[p]) for a, p in zip(args, params)])


def _kind(type_name: str) -> str:
    return "int" if type_name.startswith("i") else "float"


def _fit(b: ir.IRBuilder, v: ir.Value, t: ir.Type) -> ir.Value:
    """``v`` as ``t``, a type of the same kind (integers sign-extended or truncated)."""
    if v.type == t:
        return v
    if isinstance(t, ir.IntType):
        return b.sext(v, t) if v.type.width < t.width else b.trunc(v, t)
    return b.fpext(v, t) if isinstance(t, ir.DoubleType) else b.fptrunc(v, t)


def link(module: llvm.ModuleRef) -> None:
    """Link libdevice into ``module`` where it declares ``__nv_*`` functions, each then
    internal (the optimiser keeps only what is called)."""
    if not any(f.name.startswith(PREFIX) and f.is_declaration for f in module.functions):
        return
    library = llvm.parse_bitcode(_bitcode(find()))
    library.triple = module.triple
    library.data_layout = module.data_layout
    module.link_in(library)
    for f in module.functions:
        if f.name.startswith(PREFIX) and not f.is_declaration:
            f.linkage = "internal"
