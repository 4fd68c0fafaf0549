"""``kernel[grid](...)`` on CUDA arrays: bind the arguments, compile once per signature
(:func:`.nv_compiler.compile_nv`), load the PTX and launch on the current stream."""
from __future__ import annotations

import ctypes
import threading
from typing import NamedTuple

import numpy as np

from . import dtypes, knobs
from .errors import LaunchError
from .frontend.argspec import ArgSpec
from .launch_options import split_options
from .runtime import backend_cuda, tensor_maps
from .runtime.array_tables import ArrayTable, cuda_table_meta, cuda_table_rows
from .targets.nvidia import DEFAULT_NV_TARGET, for_compute_capability, nv_target
from .nv_compiler import compile_nv

#: the numpy/torch dtype name of an array -> its element type (every array type, and torch's bool)
_TORCH_NAMES = {**{t.numpy_name: t.name for t in dtypes.ARRAY_TYPES.values()}, "bool": "i1"}
_KERNELS: dict[tuple, tuple] = {}


def _spec(name: str, value) -> ArgSpec:
    if value.__class__ is ArrayTable:     # its device table, an i64 [G, 4] CUDA tensor at the launch
        cuda_table_rows(value)            # (refuses numpy entries before anything compiles)
        dtype = "bfloat16" if value.dtype == dtypes.numpy_dtype("bf16") else value.dtype.name
        if dtype not in _TORCH_NAMES:
            raise LaunchError(f"argument {name!r}: array tables of dtype {dtype} are not supported")
        return ArgSpec("table", _TORCH_NAMES[dtype], 2)
    if backend_cuda.is_cuda_array(value):
        dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
        if dtype not in _TORCH_NAMES:
            dtype = np.dtype(backend_cuda.cuda_interface(value)["typestr"]).name
        if dtype not in _TORCH_NAMES:
            raise LaunchError(f"argument {name!r}: CUDA arrays of dtype {dtype} are not supported")
        return ArgSpec("array", _TORCH_NAMES[dtype], backend_cuda.array_ndim(value))
    if isinstance(value, bool):
        raise LaunchError(f"argument {name!r}: bool scalars are not supported; pass an int")
    if isinstance(value, (int, np.integer)):
        return ArgSpec("scalar", "i32" if -2**31 <= int(value) < 2**31 else "i64")
    if isinstance(value, (float, np.floating)):
        return ArgSpec("scalar", "f32")
    raise LaunchError(f"argument {name!r}: NVIDIA targets take CUDA arrays (torch CUDA tensors) and Python "
                      f"scalars, got {type(value).__name__}")


def default_target(args: tuple) -> str:
    """The target of the GPU the arrays live on (sm90 on Hopper)."""
    try:
        return for_compute_capability(*backend_cuda.compute_capability()).name
    except LaunchError:
        return DEFAULT_NV_TARGET


def _grid3(grid) -> tuple[int, int, int]:
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(grid) <= 3 or not all(isinstance(g, (int, np.integer)) and g >= 0 for g in grid):
        raise LaunchError(f"grid must be 1 to 3 non-negative ints, got {grid!r}")
    return tuple(int(g) for g in grid) + (1,) * (3 - len(grid))


def kernel_for(jit, target: str, args: tuple, kwargs: dict):
    """(NvKernel, CUDA function, runtime values) of this launch, compiled once."""
    runtime, specs, constants = [], {}, {}
    kwargs, options = split_options(kwargs, jit.signature.parameters)
    bound = jit.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    for name, value in bound.arguments.items():
        if name in jit.constexpr_params:
            constants[name] = getattr(value, "value", value)
        else:
            specs[name] = _spec(name, value)
            runtime.append((name, value))
    tma = tma_arrays(nv_target(target), runtime, specs)
    key = (jit.source_hash(), target, tuple(sorted(specs.items())), repr(sorted(constants.items(), key=str)),
           options.key(), tma)
    found = _KERNELS.get(key)
    if found is None:
        kernel = compile_nv(jit.fn, specs, constants, nv_target(target), options.num_warps, options.num_stages,
                            tma)
        found = _KERNELS[key] = (kernel, backend_cuda.load_function(kernel.ptx, kernel.name,
                                                                    smem_bytes=kernel.smem_bytes))
    return found[0], found[1], runtime, specs


def tma_arrays(target, runtime: list, specs: dict) -> tuple[str, ...]:
    """The 16-bit arrays (rank 2 to ``tma_rank_max``) of a launch that a TMA tensor map can describe
    (:func:`.runtime.tensor_maps.describable`); none where ``XETILE_NV_TMA=0``."""
    if not target.tma or not knobs.NV_TMA.get():
        return ()
    out = []
    for name, value in runtime:
        spec = specs[name]
        if spec.kind == "array" and spec.dtype in tensor_maps.DATA_TYPES and 2 <= spec.ndim <= target.tma_rank_max:
            address, shape, strides, itemsize = backend_cuda.array_layout(value)
            if tensor_maps.describable(address, shape, strides, itemsize, target):
                out.append(name)
    return tuple(out)


def _map_params(kernel, runtime: list, specs: dict) -> tuple[list[tuple], tuple]:
    """The tensor-map parameters of ``kernel`` (after the others): one 128-byte map a
    (array, box) it names; and what each map was made from besides the array's address
    (:class:`MapSource`, for :class:`Relaunch` to make it again at another address)."""
    values = dict(runtime)
    arrays = [name for name, _ in runtime if specs[name].kind == "array"]
    out, sources = [], []
    for name, box_rows, box_cols in kernel.tensor_maps:
        address, shape, strides, itemsize = backend_cuda.array_layout(values[name])
        outer = strides[0] if len(shape) == 2 else strides[:-1]
        fields = tensor_maps.map_fields(address, shape, outer, itemsize, (box_rows, box_cols), kernel.target)
        out.append((tensor_maps.encode(fields, specs[name].dtype), None))
        sources.append(MapSource(arrays.index(name), shape, outer, itemsize, (box_rows, box_cols),
                                 specs[name].dtype, kernel.target))
    return out, tuple(sources)


class MapSource(NamedTuple):
    """A launch's tensor map but for the array's address: which of the kernel's arrays
    (in parameter order), its shape, outer strides (bytes), element size, box, dtype name
    and target."""
    array: int
    shape: tuple
    outer: object
    itemsize: int
    box: tuple
    dtype: str
    target: object

    def encode(self, address: int):
        """The map at ``address``; None where TMA cannot describe the array there (an
        address off the 16-byte alignment the kernel was compiled for)."""
        if address % 16:
            return None
        return tensor_maps.encode(tensor_maps.map_fields(address, self.shape, self.outer, self.itemsize, self.box,
                                                         self.target), self.dtype)


#: the last launch of each kernel: jit -> (its dependencies, the call's token, the
#: kernel, function, grid, packed parameters)
_LAST: dict[int, tuple] = {}


def _token(grid, target, args: tuple, kwargs: dict):
    """What a launch's marshalled parameters depend on, cheap to compute: the grid, the
    target, the TMA knob, each torch CUDA tensor's address, shape, strides and dtype, each
    scalar's type and value, the keywords' names, values and types in the call's order (a
    call naming them in another order takes the full path once); None where an argument
    is of another kind (then the launch takes the full path)."""
    if callable(grid):
        return None
    parts = [grid, target, knobs.NV_TMA.get()]
    for value in args:
        t = value.__class__
        if t in _SCALARS:
            parts.append((t, value))
        elif getattr(value, "is_cuda", False) and hasattr(value, "data_ptr"):
            parts.append((value.data_ptr(), value.shape, value.stride(), value.dtype))
        else:
            return None
    values = tuple(kwargs.values())
    types = tuple(map(type, values))
    if ArrayTable in types:
        return None     # (its device table is made anew each launch)
    kw = (tuple(kwargs), values, types)
    try:
        hash(kw)
    except TypeError:
        return None
    parts.append(kw)
    return tuple(parts)


#: the scalar argument types a launch token holds by value (their type too: 1 == 1.0 == True)
_SCALARS = frozenset((bool, int, float))


#: launches seen, by :func:`_seen_key`: (kernel, CUDA function, where each runtime
#: argument is, their specs)
_SEEN: dict[tuple, tuple] = {}
_PLAIN_KW = (int, bool, str, type(None))


def _seen_key(jit, target: str, args: tuple, kwargs: dict) -> tuple | None:
    """A key of what :func:`kernel_for`'s key depends on, cheap to build: the kernel,
    target, each positional argument's kind (a torch tensor's dtype and rank, a scalar's
    type by range; a constexpr's value), the keyword values (floats by their bits); None
    where an argument is of another kind (the full path then binds it)."""
    if len(args) > len(jit.signature.parameters):
        return None
    kinds = []
    constexprs = jit.constexpr_params
    for name, v in zip(jit.signature.parameters, args):
        t = v.__class__
        if name in constexprs:
            if t is float:
                kinds.append((t, v.hex()))
            elif t in _PLAIN_KW or not hasattr(v, "data_ptr") and getattr(t, "__hash__", None) is not None:
                kinds.append((t, v))
            else:
                return None
        elif t is int:
            kinds.append("i32" if -2**31 <= v < 2**31 else "i64")
        elif t is float:
            kinds.append("f32")
        elif hasattr(v, "data_ptr") and hasattr(v, "dim") and not v.requires_grad:
            kinds.append((v.dtype, v.dim()))
        else:
            return None
    words = []
    for name, v in kwargs.items():
        t = v.__class__
        if name not in constexprs and name in jit.signature.parameters and t in (int, float):
            words.append((name, "f32" if t is float else "i32" if -2**31 <= v < 2**31 else "i64"))
        elif t is float:
            words.append((name, t, v.hex()))
        elif t in _PLAIN_KW or not hasattr(v, "data_ptr") and getattr(t, "__hash__", None) is not None:
            words.append((name, t, v))
        else:
            return None
    return (jit, target, tuple(kinds), tuple(words))


def _places(jit, runtime: list, args: tuple, kwargs: dict) -> tuple:
    """Where each runtime argument of a launch is: (0, position), (1, keyword) or (2, its
    default value)."""
    names = list(jit.signature.parameters)
    out = []
    for name, value in runtime:
        index = names.index(name)
        out.append((0, index) if index < len(args) else (1, name) if name in kwargs else (2, value))
    return tuple(out)


def run(jit, grid, target: str | None, args: tuple, kwargs: dict):
    """Compile (once) and launch ``jit`` over ``grid`` on CUDA arrays.  A launch whose
    token (:func:`_token`) is the previous launch's of this kernel, its sources unchanged,
    re-sends that launch's packed parameters (no binding, no argument checks, no tensor
    maps made: they passed or were made for the very same arguments).  Otherwise a launch
    whose arguments are of the kinds of an earlier one (:func:`_seen_key`; the kernel's
    globals unchanged, the same arrays describable by TMA) takes that one's kernel without
    binding or keying again."""
    token = _token(grid, target, args, kwargs)
    deps = jit.dependencies()
    last = _LAST.get(id(jit))
    if token is not None and last is not None and last[0] is jit and last[1] is deps and last[2] == token:
        kernel, function, grid3, packed = last[3:7]
        backend_cuda.launch_packed(function, grid3, kernel.threads, packed, shared_bytes=kernel.smem_bytes)
        return kernel
    target = target or default_target(args)
    key = _seen_key(jit, target, args, kwargs)
    try:
        hash(key)
    except TypeError:       # a keyword value whose parts do not hash (a tuple of lists)
        key = None
    seen = _SEEN.get(key) if key is not None and jit._deps is not None and jit._deps.unchanged() else None
    if seen is not None:
        kernel, function, places, specs, tma = seen
        runtime = [(name, args[where] if kind == 0 else kwargs[where] if kind == 1 else where)
                   for name, (kind, where) in zip(specs, places)]
        if tma_arrays(nv_target(target), runtime, specs) != tma:   # an array's alignment changed
            seen = None
    if seen is None:
        kernel, function, runtime, specs = kernel_for(jit, target, args, kwargs)
        if key is not None:
            _SEEN[key] = (kernel, function, _places(jit, runtime, args, kwargs), specs,
                          tma_arrays(nv_target(target), runtime, specs))
    params, tables, pointers = [], [], []
    for name, value in runtime:
        spec = specs[name]
        if spec.kind == "array":
            pointers.append(len(params))
            params += backend_cuda.array_params(value, name)
        elif spec.kind == "table":      # the entries' addresses and shapes, in a CUDA buffer
            tables.append(cuda_table_meta(value))   # (held past the launch; then freed in stream order)
            params += backend_cuda.array_params(tables[-1], name)
        else:
            params.append(backend_cuda.scalar_param(value, spec.dtype, name))
    maps, sources = _map_params(kernel, runtime, specs)
    params += maps
    grid3 = _grid3(grid(dict(constants_of(jit, args, split_options(kwargs, jit.signature.parameters)[0])))
                   if callable(grid) else grid)
    if all(grid3):
        packed = backend_cuda.pack_params(params)
        backend_cuda.launch_packed(function, grid3, kernel.threads, packed, shared_bytes=kernel.smem_bytes)
        if token is not None:
            _LAST[id(jit)] = (jit, deps, token, kernel, function, grid3, packed, params, tuple(pointers), sources)
    return kernel


class Relaunch:
    """A kernel's launch made ready to repeat with other array addresses: the same
    kernel, grid, array shapes and strides and scalar values, its own packed parameters
    (each call writes the arrays' addresses into them, and makes the tensor maps of
    arrays whose address changed, under a lock, and launches on the current stream).
    What an op's host path keeps per argument layout (:func:`relaunch_of`;
    ``ops/rows.py``, ``ops/matmul.py``): no binding, keying or checks a call."""

    __slots__ = ("jit", "deps", "kernel", "function", "grid3", "packed", "slots", "lock", "maps", "addresses")

    def __init__(self, jit, deps, kernel, function, grid3, params: list, pointers: tuple, sources: tuple = ()):
        self.jit, self.deps, self.kernel, self.function, self.grid3 = jit, deps, kernel, function, grid3
        self.packed = backend_cuda.pack_params(params)
        self.slots = [self.packed.objects[i] for i in pointers]
        self.lock = threading.Lock()
        first = len(params) - len(sources)      # (the maps are the last parameters)
        self.maps = tuple((first + i, source) for i, source in enumerate(sources))
        self.addresses = tuple(params[i][0] for i in pointers)

    def valid(self) -> bool:
        """Whether the kernel's sources and the globals it read are still those compiled."""
        return self.jit._deps is self.deps and self.deps.unchanged()

    def __call__(self, *addresses: int) -> bool:
        """Launch with these array addresses (in the kernel's parameter order); False
        (nothing launched) where a tensor map cannot describe an array at its new address."""
        with self.lock:
            if self.maps and addresses != self.addresses:
                made = [(index, source.encode(addresses[source.array])) for index, source in self.maps
                        if addresses[source.array] != self.addresses[source.array]]
                if any(data is None for _, data in made):
                    return False
                for index, data in made:
                    self.packed.objects[index] = data
                    self.packed.pointers[index] = ctypes.addressof(data)
                self.addresses = addresses
            for slot, address in zip(self.slots, addresses):
                slot.value = address
            backend_cuda.launch_packed(self.function, self.grid3, self.kernel.threads, self.packed,
                                       shared_bytes=self.kernel.smem_bytes)
            return True


def relaunch_of(jit, grid, target: str, args: tuple, kwargs: dict) -> Relaunch | None:
    """The launch of ``jit`` just made with these arguments (torch CUDA tensors and Python
    scalars) as a :class:`Relaunch`; None where it is not the kernel's last launch (another
    thread's came between)."""
    last = _LAST.get(id(jit))
    if last is None or last[0] is not jit or last[2] != _token(grid, target, args, kwargs):
        return None
    jit_, deps, _, kernel, function, grid3, _, params, pointers, sources = last
    return Relaunch(jit_, deps, kernel, function, grid3, params, pointers, sources)


def constants_of(jit, args: tuple, kwargs: dict) -> dict:
    bound = jit.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)
