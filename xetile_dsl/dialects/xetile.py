"""The XeTile dialect (the XeTile RFC) on xDSL.

The definitions live in three modules (attributes and types, memory ops and tile_mma,
vector/scatter ops); this module re-exports every public name and holds the Dialect
registry, so ``from xetile_dsl.dialects.xetile import InitTileOp`` keeps working.
Custom syntax and the spellings accepted from the RFCs: docs/ir.md.
"""
from __future__ import annotations

from xdsl.ir import Dialect

from ._syntax import locate_verify_errors

from ._xetile_atomic_ops import (
    ATOMIC_OPS, DEFAULT_SCOPE, DEFAULT_SEM, SCALAR_ATOMIC_OPS, SCOPES, SEMS, AtomicCASScalarOp, AtomicRMWScalarOp,
    FenceOp, check_order, order_of, order_props, scalar_atomic_subgroups_error,
)
from ._xetile_extern_ops import ExternElementwiseOp
from ._xetile_ops import (
    InitTileOp,
    LoadTileOp,
    PrefetchTileOp,
    StoreTileOp,
    TileMMAOp,
    UpdateTileOffsetOp,
    _check_tile_vector,
)
from ._xetile_types import TileAttr, TileType, WgMapAttr, check_wg_map
from ._xetile_vector_ops import (
    ATOMIC_KINDS,
    FLOAT_REDUCE_KINDS,
    INT_REDUCE_KINDS,
    AtomicRMWOp,
    AtomicRMWTileOp,
    LoadGatherOp,
    StoreScatterOp,
    TileBroadcastOp,
    TileConvLayoutOp,
    TilePackOp,
    TileReduceOp,
    TileTransposeOp,
    TileUnpackOp,
    ALIAS_OPS,
)

locate_verify_errors(WgMapAttr, TileAttr, TileType)

XeTile = Dialect(
    "xetile",
    [
        InitTileOp, LoadTileOp, StoreTileOp, PrefetchTileOp, UpdateTileOffsetOp, TileMMAOp,
        AtomicRMWOp, AtomicRMWTileOp, TileTransposeOp, TileReduceOp, TileBroadcastOp, TilePackOp, TileUnpackOp,
        LoadGatherOp, StoreScatterOp, TileConvLayoutOp, ExternElementwiseOp, *ATOMIC_OPS, *ALIAS_OPS,
    ],
    [WgMapAttr, TileAttr, TileType],
)

__all__ = [
    "XeTile", "WgMapAttr", "TileAttr", "TileType", "check_wg_map",
    "InitTileOp", "LoadTileOp", "StoreTileOp", "PrefetchTileOp", "UpdateTileOffsetOp", "TileMMAOp",
    "AtomicRMWOp", "AtomicRMWTileOp", "TileTransposeOp", "TileReduceOp", "TileBroadcastOp", "TilePackOp",
    "TileUnpackOp", "LoadGatherOp", "StoreScatterOp", "TileConvLayoutOp", "ExternElementwiseOp",
    "AtomicRMWScalarOp", "AtomicCASScalarOp", "FenceOp", "ATOMIC_OPS", "SCALAR_ATOMIC_OPS", "SEMS", "SCOPES",
    "DEFAULT_SEM", "DEFAULT_SCOPE", "check_order", "order_of", "order_props", "scalar_atomic_subgroups_error",
    "ATOMIC_KINDS", "INT_REDUCE_KINDS", "FLOAT_REDUCE_KINDS", "_check_tile_vector",
]
