"""The ordered list of lowering stages; each stage's IR is kept as MLIR text."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ..dialects import make_context, print_module
from .blocking import XeTileBlocking
from .sg_transpose import XeTileSgTranspose
from .sink_to_uses import SinkToUses
from .split_accumulators import SplitAccumulators
from .wg_to_sg import XeTileWgToSg
from .xegpu_to_simt import XeGPUToSIMT
from .xetile_to_xegpu import ConvertXeTileToXeGPU


def stages(target: str) -> list[tuple[str, list]]:
    """(stage name, passes) in order; the stage name is the key in ``compiled.asm``.

    blocking must run before the XeGPU conversion (it decides block sizes from the
    target); SIMT distribution needs the XeGPU roles (packed loads, dpas operands).
    Workgroup-level tiles are split among subgroups first, so blocking sees subgroup tiles;
    subgroup-level transposes are then folded into loads or staged in SLM.  K loops whose
    accumulators exceed the register budget are split on XeGPU (exact blocks and
    operands), before sinking orders each copy's loads next to its DPAS."""
    return [
        ("xegpu", [XeTileWgToSg(target=target), XeTileSgTranspose(target=target), XeTileBlocking(target=target), ConvertXeTileToXeGPU(target=target),
                   SplitAccumulators(target=target), SinkToUses()]),
        ("simt", [XeGPUToSIMT(target=target)]),
    ]


def lower(module: ModuleOp, target: str) -> dict[str, str]:
    """Run every stage on ``module`` in place; return each stage's MLIR text."""
    ctx = make_context()
    texts = {"xetile": print_module(module)}
    for stage, passes in stages(target):
        for p in passes:
            p.apply(ctx, module)
        module.verify()
        texts[stage] = print_module(module)
    return texts
