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


@functools.lru_cache(maxsize=None)
def names(path: str) -> frozenset:
    """The functions ``path`` defines, without the ``__nv_`` prefix."""
    module = llvm.parse_bitcode(_bitcode(path))
    return frozenset(f.name[len(PREFIX):] for f in module.functions
                     if f.name.startswith(PREFIX) and not f.is_declaration)


def has(name: str) -> bool:
    path = find()
    return path is not None and name in names(path)


def call(b: ir.IRBuilder, name: str, ret: ir.Type, args: list, op=None) -> ir.Value:
    """A call of libdevice's ``__nv_<name>`` on ``args``; a LoweringError at ``op`` where
    there is no libdevice or it has no such function."""
    path = find()
    if path is None:
        raise LoweringError(f"nvptx: {name} comes from CUDA's libdevice ({FILE}), which was not found: install "
                            f"the nvidia-cuda-nvcc wheel or a CUDA toolkit, or set $XETILE_LIBDEVICE", op)
    if name not in names(path):
        raise LoweringError(f"nvptx: libdevice ({path}) has no function {PREFIX}{name}", op)
    module = b.module
    fn = module.globals.get(PREFIX + name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), PREFIX + name)
    return b.call(fn, args)


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
