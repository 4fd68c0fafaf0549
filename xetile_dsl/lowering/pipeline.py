"""The ordered list of lowering stages; each stage's IR is kept as MLIR text (printed
when first read: :mod:`xetile_dsl.stage_texts`)."""
from __future__ import annotations

import time
from typing import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from ..dialects import make_context, print_module
from ..dialects.walk import ops_in
from ..errors import InternalCompilerError, XeTileError
from ..knobs import VERIFY_IR, debug_tracebacks
from ..stage_texts import StageTexts
from .passes.blocking import XeTileBlocking
from .passes.one_working_subgroup import XeTileOneWorkingSubgroup
from .passes.prefetch_stages import XeTilePrefetchStages
from .passes.rotate_loads import RotateLoads
from .passes.sg_transpose import XeTileSgTranspose
from .passes.sink_to_uses import SinkToUses
from .passes.split_accumulators import SplitAccumulators
from .passes.wg_to_sg import XeTileWgToSg
from .passes.xegpu_to_simt import XeGPUToSIMT
from .passes.xetile_to_xegpu import ConvertXeTileToXeGPU


def stages(target: str, num_stages: int | None = None, num_warps: int | None = None) -> list[tuple[str, list]]:
    """(stage name, passes) in order; the stage name is the key in ``compiled.asm``.

    blocking must run before the XeGPU conversion (it decides block sizes from the
    target); SIMT distribution needs the XeGPU roles (packed loads, dpas operands).
    Workgroup-level tiles are split among subgroups first, so blocking sees subgroup tiles;
    subgroup-level transposes are then folded into loads or staged in SLM.  K loops whose
    accumulators exceed the register budget are split on XeGPU (exact blocks and
    operands), before sinking orders each copy's loads next to its DPAS.  K-loop loads are
    rotated one iteration ahead last, on per-lane values (no layout to carry), after
    sinking (which would move a next-step load down to the yield).  K-loop prefetches get
    their ``num_stages`` distance first, on the user's tiles (one offset per tile, before
    the distribution and blocking multiply them); without ``num_stages`` it changes nothing.
    A kernel without wg_map launched with ``num_warps`` > 1 is guarded to run in subgroup 0
    of its workgroup before the distribution (which leaves it as it is); without
    ``num_warps`` that pass changes nothing."""
    return [
        ("xegpu", [XeTilePrefetchStages(num_stages=num_stages or 0), XeTileOneWorkingSubgroup(num_warps=num_warps or 0),
                   XeTileWgToSg(target=target), XeTileSgTranspose(target=target), XeTileBlocking(target=target), ConvertXeTileToXeGPU(target=target),
                   SplitAccumulators(target=target), SinkToUses()]),
        ("simt", [XeGPUToSIMT(target=target), RotateLoads(target=target)]),
    ]


def pass_names(target: str) -> list[str]:
    """Every pass of :func:`stages`, in order (the lowering keys of ``CompiledKernel.timings``)."""
    return [p.name for _, passes in stages(target) for p in passes]


def lower(module: ModuleOp, target: str, timings: dict | None = None,
          after_pass: Callable[[str, ModuleOp], None] | None = None, texts: bool = True,
          num_stages: int | None = None, num_warps: int | None = None) -> StageTexts:
    """Run every stage on ``module`` in place; return each stage's MLIR text, printed
    when first read: from a clone of the module taken after the stage (later stages
    change the module in place), or, for the last stage, from ``module`` itself, which
    nothing changes after lowering (codegen only reads it).  With ``texts=False`` (a
    ``@jit`` compile, whose kernel nobody asks for them) there are none, and no clones
    (~6 ms of the RFC 2.1 GEMM's compile).

    With ``XETILE_VERIFY_IR=1`` (the tests set it) the module is verified after each
    stage, timed with the stage's last pass.  ``timings`` (when given) receives each
    pass's seconds under the pass's name; ``after_pass(name, module)`` is called after
    each pass (IR dumps), outside the timed span.  ``num_stages``: the K-loop prefetch
    depth (launch option; None keeps the kernel's own distances); ``num_warps``: the
    launch's subgroup count (a kernel without wg_map runs in subgroup 0 of that many)."""
    ctx = make_context()
    verify = VERIFY_IR.get()
    kept = StageTexts()
    if texts:
        _defer_print(kept, "xetile", module.clone())
    all_stages = stages(target, num_stages, num_warps)
    for stage, passes in all_stages:
        for p in passes:
            start = time.perf_counter()
            run_guarded(p.name, lambda: p.apply(ctx, module), module)
            if verify and p is passes[-1]:
                run_guarded(f"{p.name} (verifying its output)", module.verify, module)
            if timings is not None:
                timings[p.name] = time.perf_counter() - start
            if after_pass is not None:
                after_pass(p.name, module)
        if texts:
            _defer_print(kept, stage, module if stage == all_stages[-1][0] else module.clone())
    return kept


def _defer_print(texts: StageTexts, stage: str, snapshot: ModuleOp) -> None:
    texts.defer(stage, lambda: print_module(snapshot))


def run_guarded(pass_name: str, run, module: ModuleOp) -> None:
    """``run()``; an exception other than our own errors is a compiler bug, reported as an
    :class:`InternalCompilerError` naming the pass, at the op it was working on (so the
    user sees which line of the kernel triggered it).  XETILE_DEBUG=1 re-raises as is."""
    try:
        run()
    except XeTileError:
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure is a compiler bug
        if debug_tracebacks():
            raise
        raise InternalCompilerError(
            f"internal compiler error in pass {pass_name!r} ({type(exc).__name__}: {exc}); this is a bug in "
            "xetile_dsl, not in the kernel: please report it (set XETILE_DEBUG=1 for the compiler traceback)",
            _nearest_located_op(exc.__traceback__, module)) from exc


def _nearest_located_op(tb, module: ModuleOp) -> Operation | None:
    """The op with a source location that the innermost frame of ``tb`` was handling (an
    Operation, or the owner of an SSA value, among its locals); else the module's first
    located op."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            op = value.owner if isinstance(value, SSAValue) else value
            if isinstance(op, Operation) and _line_of(op):
                return op
    return next((op for op in ops_in(module) if _line_of(op)), None)


def _line_of(op: Operation) -> int:
    """The user's line of ``op`` (0 when it has no file location)."""
    return getattr(getattr(getattr(op, "location", None), "line", None), "data", 0)
