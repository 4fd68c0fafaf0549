"""``import xetile_dsl.language as xt`` -- the kernel language.

Tile operations are named after the XeTile RFC ops (``core``); element-wise math,
reductions, casts and value creation follow Triton's names (``elementwise``)."""
from .core import (
    atomic_rmw, barrier, bfloat16, builtin, cdiv, constexpr, dtype, float16, float32, init_tile, int1, int8, int32,
    int64, load_gather, load_tile, num_programs, num_subgroups, prefetch_tile, program_id, slm_alloc, store_scatter,
    store_tile, subgroup_id, tfloat32, tile_conv_layout, tile_mma, uint8, uint32, update_tile_offset,
    wg_map,
)
from .elementwise import (
    abs, acos, acosh, arange, argmax, argmin, asin, asinh, astype, atan, atan2, atanh, broadcast_to, cbrt, ceil,
    copysign, cos, cosh, erf, erfc, exp, exp2, expm1, floor, fma, fmod, full, isfinite, isinf, isnan, log, log1p, log2,
    log10, max, maximum, min, minimum, pow, prod, round, rsqrt, sigmoid, signbit, sin, sinh, sqrt, static_range,
    sum, tan, tanh, tile_broadcast, tile_reduce, tile_transpose, transpose, trunc, where, zeros,
)
from .random import philox, rand, rand4x, randint, randint4x, randn, randn4x, umulhi

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cosh", "erfc", "expm1",
    "floor", "fmod", "isfinite", "isinf", "isnan", "log1p", "log10", "pow", "round", "signbit", "sinh", "tan",
    "trunc",
    "abs", "arange", "argmax", "argmin", "astype", "atomic_rmw", "barrier", "bfloat16", "broadcast_to", "builtin", "cdiv",
    "constexpr", "cos", "dtype", "erf", "exp", "exp2", "float16", "float32", "fma", "full", "init_tile",
    "int1", "int8", "int32", "int64", "load_gather", "load_tile", "log", "log2", "max", "maximum", "min",
    "minimum", "num_programs", "num_subgroups", "philox", "prefetch_tile", "prod", "program_id", "rand",
    "rand4x", "randint", "randint4x", "randn", "randn4x", "rsqrt", "sigmoid",
    "sin", "slm_alloc", "sqrt", "static_range", "store_scatter", "store_tile", "subgroup_id", "sum", "tanh",
    "tfloat32", "tile_broadcast", "tile_conv_layout", "tile_mma", "tile_reduce", "tile_transpose",
    "transpose", "uint8", "uint32", "umulhi", "update_tile_offset", "wg_map", "where", "zeros",
]
