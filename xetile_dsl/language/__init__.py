"""``import xetile_dsl.language as xt`` -- the kernel language."""
from .core import (
    bfloat16, builtin, constexpr, dtype, float16, float32, full, init_tile, int8, int32, int64,
    load_tile, num_programs, prefetch_tile, program_id, store_tile, tfloat32, tile_mma, uint8,
    update_tile_offset, wg_map, zeros,
)

__all__ = [
    "bfloat16", "builtin", "constexpr", "dtype", "float16", "float32", "full", "init_tile", "int8",
    "int32", "int64", "load_tile", "num_programs", "prefetch_tile", "program_id", "store_tile",
    "tfloat32", "tile_mma", "uint8", "update_tile_offset", "wg_map", "zeros",
]
