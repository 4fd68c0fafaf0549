"""LLVM IR text -> SPIR-V binary, through the SPIR-V backend bundled with llvmlite.

This is the ONE place that touches LLVM's process-global options (``llvm.set_option``
cannot be undone and accumulates), so every caller goes through :func:`emit_spirv`.
See ``shared/docs/llvm-to-spirv.md``.
"""
from __future__ import annotations

import os
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
)
REQUIRED_LLVMLITE = "0.50"

_lock = threading.Lock()
_target = None


class SpirvEmitError(RuntimeError):
    """The LLVM SPIR-V backend is missing, misconfigured, or rejected the module."""


def emit_spirv(llvm_ir_text: str) -> bytes:
    """Parse, verify and compile LLVM IR text to a SPIR-V (1.4) binary."""
    target = _get_target()
    try:
        mod = llvm.parse_assembly(llvm_ir_text)
        mod.verify()
    except RuntimeError as exc:
        text = str(exc)
        if len(text) > 4000:  # the verifier repeats itself for every bad instruction
            text = text[:4000] + f"\n... ({len(text) - 4000} more characters)"
        raise SpirvEmitError(f"invalid LLVM IR for SPIR-V: {text}") from None
    with _lock:  # LLVM codegen state is not documented as thread-safe
        # A fresh target machine per module: the SPIR-V backend keeps per-module state
        # in its subtarget, and reusing one machine for a second module crashed
        # (segfault) in LLVM 22.
        tm = target.create_target_machine(opt=2)  # SPIR-V 1.4 is the backend's default
        return tm.emit_object(mod)


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
