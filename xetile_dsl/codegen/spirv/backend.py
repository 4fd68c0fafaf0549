"""LLVM's SPIR-V backend through llvmlite, and the emitter process's side of
:mod:`.translate`: this module imports llvmlite and nothing of xetile_dsl, so the
emitter process runs it as a script (``python backend.py``) and starts in
0.1-0.2 s of CPU instead of the 0.4 s that importing xetile_dsl costs (a CPU kernel's
first compile waits for that process: its builtins' modules follow the kernel's own).

This is the ONE place that touches LLVM's process-global options (``llvm.set_option``
cannot be undone and accumulates).  See docs/decisions/002-pipeline-to-spirv-through-llvm.md.
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading

import llvmlite
import llvmlite.binding as llvm

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
    "SPV_EXT_shader_atomic_float_add",   # OpAtomicFAddEXT: Target.atomic_float_add
)
REQUIRED_LLVMLITE = "0.50"

_lock = threading.Lock()
_target = None


class _BackendError(Exception):
    """The backend refused the module (or is missing); :mod:`.translate` raises it as a
    SpirvEmitError with this message."""


def serve() -> None:
    """The emitter process's loop (see :class:`.translate._Emitter`): until its input closes.  Each
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
            except _BackendError as exc:
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
        raise _BackendError(f"invalid LLVM IR for SPIR-V: {text}") from None
    with _lock:  # LLVM codegen state is not documented as thread-safe
        binary = made.tm.emit_object(mod)
    del mod  # dispose of the module before its context
    return binary


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
                raise _BackendError(
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
        raise _BackendError(f"LLVM rejected {option!r}: {message.strip()}")


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


def main(argv: list[str]) -> None:
    """As a script: the emitter process's loop, or with ``--once`` one module from
    standard input to standard output (a new process's clean emission)."""
    if argv[1:] == ["--once"]:
        sys.stdout.buffer.write(_emit_once(_get_target(), sys.stdin.read()))
    else:
        serve()


if __name__ == "__main__":
    main(sys.argv)
