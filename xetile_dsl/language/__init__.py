"""``import xetile_dsl.language as xt`` -- the kernel language.

Tile operations are named after the XeTile RFC ops (``core``); element-wise math,
reductions, casts and value creation follow Triton's names (``elementwise``).

Array elements: on an array argument ``x[i, j]`` (one index per dimension: Python ints or
integer scalars) reads one element as a runtime scalar of the array's dtype, and
``x[i, j] = v`` / ``x[i, j] += v`` write one (``v`` converted to the dtype).  Outside the
array a read gives 0 and a write is dropped, in every flavour and the interpreter (the
rule of tile padding and clipping); indices do not wrap, so ``x[-1, 0]`` is outside (a
constant negative index is a compile error).  Such scalars may be tile offsets, loop
bounds, conditions and ``init_tile`` arguments::

    @xd.jit
    def grouped(meta, a, c, BM: xt.constexpr):
        g = xt.program_id(0)
        rows, first = meta[g, 0], meta[g, 1]      # int32 scalars read from memory
        for m in range(0, rows, BM):
            t = xt.load_tile(xt.init_tile(a, [first + m, 0], [BM, 16]))
            xt.store_tile(t, xt.init_tile(c, [first + m, 0], [BM, 16]))
            c[first + m, 0] = xt.item(xt.max(xt.max(t, axis=1), axis=0))  # one element written

Python's ``min``, ``max`` and ``abs`` accept runtime scalars (``min(n - k, BK)``), and a
name holding a number that a runtime ``if`` or loop reassigns becomes a runtime value.
The implementation is ``frontend/array_elements.py``, ``frontend/runtime_builtins.py`` and
``frontend/carried_literals.py``."""
from .core import (
    atomic_rmw, barrier, bfloat16, builtin, cdiv, constexpr, dtype, float8_e4m3fn, float8_e5m2, float16, float32,
    init_tile, int1, int8, int32,
    int64, load_gather, load_tile, num_programs, num_subgroups, prefetch_tile, program_id, slm_alloc, store_scatter,
    store_tile, subgroup_id, tfloat32, tile_conv_layout, tile_mma, uint8, uint32, update_tile_offset,
    wg_map,
)
from .atomics import atomic_cas, atomic_xchg, fence
from .elementwise import (
    abs, acos, acosh, arange, argmax, argmin, asin, asinh, astype, atan, atan2, atanh, broadcast_to, cbrt, ceil,
    copysign, cos, cosh, erf, erfc, exp, exp2, expand_dims, extern, expm1, floor, fma, fmod, full, isfinite, isinf, isnan, item, log, log1p, log2,
    log10, max, maximum, min, minimum, pow, prod, reshape, round, rsqrt, sigmoid, signbit, sin, sinh, sqrt, static_range,
    sum, tan, tanh, tile_broadcast, tile_reduce, tile_transpose, transpose, trunc, where, zeros,
)
from .scaled import dot_scaled, unpack_int4
from .random import philox, rand, rand4x, randint, randint4x, randn, randn4x, umulhi

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cosh", "erfc", "expm1",
    "floor", "fmod", "isfinite", "isinf", "isnan", "log1p", "log10", "pow", "round", "signbit", "sinh", "tan",
    "trunc",
    "abs", "arange", "argmax", "argmin", "astype", "atomic_cas", "atomic_rmw", "atomic_xchg", "barrier", "bfloat16", "broadcast_to", "builtin", "cdiv",
    "constexpr", "cos", "dtype", "erf", "exp", "exp2", "expand_dims", "extern", "fence", "float8_e4m3fn", "float8_e5m2", "float16", "float32", "fma", "full", "init_tile",
    "int1", "int8", "int32", "int64", "item", "load_gather", "load_tile", "log", "log2", "max", "maximum", "min",
    "minimum", "num_programs", "num_subgroups", "philox", "prefetch_tile", "prod", "program_id", "rand",
    "rand4x", "randint", "randint4x", "randn", "randn4x", "reshape", "rsqrt", "sigmoid",
    "sin", "slm_alloc", "sqrt", "static_range", "store_scatter", "store_tile", "subgroup_id", "sum", "tanh",
    "tfloat32", "tile_broadcast", "tile_conv_layout", "tile_mma", "tile_reduce", "tile_transpose",
    "transpose", "uint8", "uint32", "umulhi", "update_tile_offset", "wg_map", "where", "zeros",
    "dot_scaled", "unpack_int4",
]
