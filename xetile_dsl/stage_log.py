"""What one compile records about its stages: seconds per stage and, on request, the IR
after each one (like ``mlir-opt --mlir-print-ir-after-all``).

The stages, in order, are :func:`stage_names`: ``frontend`` (Python -> XeTile IR, or the
MLIR text parsed and verified for ``compile_mlir``), each lowering pass by its name,
``llvm`` (SIMT -> LLVM IR), ``spirv`` (LLVM's SPIR-V backend), ``spirv-val`` (its
validation) and, when the machine code is built, ``ocloc``.  ``CompiledKernel.timings``
has one key per stage run; with ``dump="all"`` (or ``XETILE_DUMP_IR=1``, which prints
them to stderr) ``CompiledKernel.dumps`` holds one :class:`IRDump` per IR-producing stage.
"""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from . import dialects, knobs, progress
from .errors import ToolError, UsageError
from .lowering import pipeline
from .tools import spirv_tools

#: the values of ``compile(..., dump=)``
DUMP_CHOICES = (None, "all")
#: stages that produce no IR of their own (no dump)
CHECK_STAGES = ("spirv-val", "ocloc")


def stage_names(flavour: str, interpret: bool = False, isa: bool = False) -> list[str]:
    """The compile pipeline of GPU flavour ``flavour``, in order (the interpreter target
    stops after the frontend; ``isa`` adds the machine-code build)."""
    if interpret:
        return ["frontend"]
    return ["frontend", *pipeline.pass_names(flavour), "llvm", "spirv", "spirv-val", *(["ocloc"] if isa else [])]


@dataclass(frozen=True)
class IRDump:
    """The IR after one stage: MLIR text (frontend and the passes), LLVM IR (llvm) or
    SPIR-V assembly (spirv)."""

    stage: str
    text: str

    def __str__(self) -> str:
        return f"// -----// IR Dump After {self.stage} //----- //\n{self.text.rstrip()}\n"


@dataclass
class StageLog:
    """Timings and dumps of one compile; ``dump`` is ``compile``'s argument."""

    dump: str | None = None
    timings: dict = field(default_factory=dict)
    dumps: list = field(default_factory=list)

    def __post_init__(self):
        if self.dump not in DUMP_CHOICES:
            raise UsageError(f"dump={self.dump!r}: use dump='all' (the IR after every stage) or leave it out")
        self.echo = knobs.DUMP_IR.get()
        self.running: str | None = None        # the stage inside :meth:`timed`, for the progress line

    def stage_now(self) -> str:
        """Where the compile is, for its progress line: the stage running, else the last
        one done (the lowering passes add their timings as each ends)."""
        if self.running:
            return f"stage {self.running}"
        done = list(self.timings)
        return f"after stage {done[-1]}" if done else "starting"

    def progress(self, kernel: str, target: str):
        """A context: one stderr line if the compile runs long (:mod:`xetile_dsl.progress`)."""
        return progress.reported(f"compiling {kernel!r} for {target}", self.stage_now)

    @property
    def dumping(self) -> bool:
        return self.dump == "all" or self.echo

    @contextmanager
    def timed(self, stage: str):
        """Add the seconds of the ``with`` body to ``timings[stage]``."""
        start, self.running = time.perf_counter(), stage
        try:
            yield
        finally:
            self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - start
            self.running = None

    def after(self, stage: str, text: Callable[[], str]) -> None:
        """Record the IR after ``stage`` (``text()`` is called only when dumping)."""
        if not self.dumping:
            return
        dump = IRDump(stage, text())
        self.dumps.append(dump)
        if self.echo:
            print(dump, file=sys.stderr, flush=True)

    def after_module(self, stage: str, module) -> None:
        self.after(stage, lambda: dialects.print_module(module))

    def pass_hook(self):
        """The ``after_pass`` callback of ``pipeline.lower`` (None when not dumping)."""
        return self.after_module if self.dumping else None

    def emit_spirv(self, emit: Callable[[str, dict], bytes], llvm_text: str) -> bytes:
        """``emit(llvm_text, timings)``, timed as ``spirv`` and ``spirv-val`` (which
        ``emit`` reports), and dumped as SPIR-V assembly."""
        checks: dict = {}
        start, self.running = time.perf_counter(), "spirv"
        try:
            binary = emit(llvm_text, checks)
        finally:
            self.running = None
        validation = checks.get("spirv-val", 0.0)
        self.timings["spirv"] = time.perf_counter() - start - validation
        self.timings["spirv-val"] = validation
        self.after("spirv", lambda: _spirv_text(binary))
        return binary


def _spirv_text(binary: bytes) -> str:
    """spirv-dis's text of ``binary``, else a line saying why there is none."""
    try:
        return spirv_tools.disassemble(binary)
    except ToolError as exc:
        return f"; {len(binary)} bytes of SPIR-V; no disassembly: {exc}"
