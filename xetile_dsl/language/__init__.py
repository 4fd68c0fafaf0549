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
    abs, arange, argmax, argmin, astype, broadcast_to, cos, erf, exp, exp2, expand_dims, fma, full, log, log2, max,
    maximum, min, minimum, prod, reshape, rsqrt, sigmoid, sin, sqrt, static_range, sum, tanh, tile_broadcast,
    tile_reduce, tile_transpose, transpose, where, zeros,
)

__all__ = [
    "abs", "arange", "argmax", "argmin", "astype", "atomic_rmw", "barrier", "bfloat16", "broadcast_to", "builtin", "cdiv",
    "constexpr", "cos", "dtype", "erf", "exp", "exp2", "expand_dims", "float16", "float32", "fma", "full", "init_tile",
    "int1", "int8", "int32", "int64", "load_gather", "load_tile", "log", "log2", "max", "maximum", "min",
    "minimum", "num_programs", "num_subgroups", "prefetch_tile", "prod", "program_id", "reshape", "rsqrt", "sigmoid",
    "sin", "slm_alloc", "sqrt", "static_range", "store_scatter", "store_tile", "subgroup_id", "sum", "tanh",
    "tfloat32", "tile_broadcast", "tile_conv_layout", "tile_mma", "tile_reduce", "tile_transpose",
    "transpose", "uint8", "uint32", "update_tile_offset", "wg_map", "where", "zeros",
]
