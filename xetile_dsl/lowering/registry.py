"""The pass registry: pass name -> ModulePass class, as ``python -m xetile_dsl opt -p``
looks passes up.

The passes are listed explicitly (plain imports): a pass module that fails to import
breaks the import of this registry loudly instead of silently vanishing from ``opt``.
A new pass is added to :data:`PASSES`; ``tests/lowering/test_registry.py`` checks that
every ``ModulePass`` defined in this package is listed.
"""
from __future__ import annotations

from xdsl.passes import ModulePass

from ..errors import UsageError
from .passes.blocking import XeTileBlocking
from .passes.prefetch_stages import XeTilePrefetchStages
from .passes.rotate_loads import RotateLoads
from .passes.sg_transpose import XeTileSgTranspose
from .passes.sink_to_uses import SinkToUses
from .passes.split_accumulators import SplitAccumulators
from .passes.one_working_subgroup import XeTileOneWorkingSubgroup
from .passes.wg_to_sg import XeTileWgToSg
from .passes.xegpu_to_simt import XeGPUToSIMT
from .passes.xetile_to_xegpu import ConvertXeTileToXeGPU

#: name -> pass class, in pipeline order (lowering/pipeline.py)
PASSES: dict[str, type[ModulePass]] = {cls.name: cls for cls in (
    XeTilePrefetchStages, XeTileOneWorkingSubgroup, XeTileWgToSg, XeTileSgTranspose, XeTileBlocking, ConvertXeTileToXeGPU, SplitAccumulators, SinkToUses,
    XeGPUToSIMT, RotateLoads)}


def available_passes() -> dict[str, type[ModulePass]]:
    """Every registered pass by name (a copy: callers may not change the registry)."""
    return dict(PASSES)


def lookup(name: str) -> type[ModulePass]:
    """The pass class called ``name``; a UsageError listing the legal names otherwise."""
    try:
        return PASSES[name]
    except KeyError:
        raise UsageError(f"unknown pass {name!r}; the passes are {', '.join(PASSES)}") from None
