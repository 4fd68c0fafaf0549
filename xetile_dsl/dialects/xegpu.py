"""The XeGPU dialect (the XeGPU RFC, the XeGPU op reference) on xDSL.

Definitions live in four modules (attributes and types, block ops and dpas, scattered
ops/barriers/fence/convert_layout, the SIMT lane_transpose and a_from_c); this module re-exports every public name and holds the
Dialect registry, so ``from xetile_dsl.dialects.xegpu import LoadNdOp`` keeps working.
Custom syntax and the spellings accepted from the RFCs: docs/ir.md.
"""
from __future__ import annotations

from xdsl.ir import Dialect

from ._syntax import locate_verify_errors

from ._xegpu_attrs import (
    CHUNK_SIZES,
    SCATTER_MAX_BYTES,
    BlockTdescAttr,
    CacheHintAttr,
    FenceScopeAttr,
    LayoutAttr,
    MemorySpaceAttr,
    NbarrierType,
    ScatterTdescAttr,
    SGMapAttr,
    SliceAttr,
    TensorDescType,
    element_bits,
)
from ._xegpu_attr_aliases import ScatteredTdescAttrAlias, TdescAttrAlias
from ._xegpu_ops import (
    CACHE_HINTS,
    CreateNdTdescOp,
    DpasOp,
    LoadNdOp,
    PrefetchNdOp,
    StoreNdOp,
    UpdateNdOffsetOp,
    _hint_props,
)
from ._xegpu_lane_ops import AFromCOp, LaneTransposeOp
from ._xegpu_scatter_ops import (
    AllocNbarrierOp,
    AtomicRMWOp,
    CompileHintOp,
    ConvertLayoutOp,
    CreateTdescOp,
    FenceOp,
    InitNbarrierOp,
    LoadGatherAlias,
    LoadGatherOp,
    MfenceAlias,
    NbarrierArriveOp,
    NbarrierWaitOp,
    PrefetchOp,
    StoreScatterAlias,
    StoreScatterOp,
    UpdateOffsetOp,
    UpdateOffsetsAlias,
)

locate_verify_errors(SGMapAttr, BlockTdescAttr, ScatterTdescAttr, CacheHintAttr, MemorySpaceAttr, FenceScopeAttr,
                     LayoutAttr, SliceAttr, TensorDescType, NbarrierType)

XeGPU = Dialect(
    "xegpu",
    [
        CreateNdTdescOp, LoadNdOp, StoreNdOp, PrefetchNdOp, UpdateNdOffsetOp, DpasOp,
        CreateTdescOp, LoadGatherOp, StoreScatterOp, PrefetchOp, UpdateOffsetOp, AtomicRMWOp,
        AllocNbarrierOp, InitNbarrierOp, NbarrierArriveOp, NbarrierWaitOp, FenceOp, ConvertLayoutOp, CompileHintOp,
        LaneTransposeOp, AFromCOp, LoadGatherAlias, StoreScatterAlias, UpdateOffsetsAlias, MfenceAlias,
    ],
    [SGMapAttr, BlockTdescAttr, ScatterTdescAttr, CacheHintAttr, MemorySpaceAttr, FenceScopeAttr, LayoutAttr,
     SliceAttr, TensorDescType, NbarrierType, TdescAttrAlias, ScatteredTdescAttrAlias],
)

__all__ = [
    "XeGPU", "SGMapAttr", "BlockTdescAttr", "ScatterTdescAttr", "CacheHintAttr", "MemorySpaceAttr", "FenceScopeAttr",
    "LayoutAttr", "SliceAttr", "TensorDescType", "NbarrierType", "element_bits", "CHUNK_SIZES", "SCATTER_MAX_BYTES",
    "CACHE_HINTS", "CreateNdTdescOp", "LoadNdOp", "StoreNdOp", "PrefetchNdOp", "UpdateNdOffsetOp", "DpasOp",
    "CreateTdescOp", "LoadGatherOp", "StoreScatterOp", "PrefetchOp", "UpdateOffsetOp", "AtomicRMWOp",
    "AllocNbarrierOp", "InitNbarrierOp", "NbarrierArriveOp", "NbarrierWaitOp", "FenceOp", "ConvertLayoutOp",
    "CompileHintOp", "LaneTransposeOp", "AFromCOp", "_hint_props",
]
