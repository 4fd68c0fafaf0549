"""Disassembling a zebin's kernels: ocloc's bundled IGA when ocloc is usable, else
Debian's iga64 on the kernel's cut-out ``.text``.  Takes any object with the
:class:`~.zebin.Zebin` interface (``data``, ``device``, ``kernels``, ``text(kernel)``), so
that the zebin reader can call it without importing the compiler driver."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Protocol

from ..targets import TARGETS
from ._common import ToolError, output_text, run
from .locate import find_iga64, find_ocloc, ocloc_status


class ZebinLike(Protocol):
    """What disassembly reads of a zebin (:class:`~.zebin.Zebin` has it)."""

    data: bytes
    device: str | None
    kernels: list[str]

    def text(self, kernel: str) -> bytes: ...

#: ocloc device family -> IGA platform, for disassembling with Debian's iga64.
_IGA_PLATFORMS = {t.ocloc_device.split("-")[0]: t.iga_platform for t in TARGETS.values() if t.iga_platform}
_IGA_PLATFORMS["acm"] = "xehpg"


def _disasm_with_ocloc(zebin: ZebinLike) -> dict[str, str]:
    """All kernels' ISA via ``ocloc disasm -dump`` (no -device: uses the bundled IGA)."""
    with tempfile.TemporaryDirectory(prefix="xetile-disasm-") as tmp:
        binp, dump = Path(tmp) / "k.bin", Path(tmp) / "dump"
        binp.write_bytes(zebin.data)
        proc = run([find_ocloc(), "disasm", "-file", binp, "-dump", dump], cwd=tmp)
        out = {k: (dump / f".text.{k}.asm") for k in zebin.kernels}
        if proc.returncode != 0 or not all(p.is_file() for p in out.values()):
            raise ToolError(f"ocloc disasm failed (exit {proc.returncode}):\n{output_text(proc)}")
        return {k: p.read_text(errors="replace") for k, p in out.items()}


def _disasm_with_iga64(zebin: ZebinLike, kernel: str) -> str:
    """One kernel's ISA via Debian's ``iga64 -d -p=<platform>`` on the cut-out .text."""
    family = (zebin.device or "").split("-")[0]
    platform = _IGA_PLATFORMS.get(family)
    if platform is None:
        raise ToolError(f"no IGA platform known for device {zebin.device!r}")
    with tempfile.TemporaryDirectory(prefix="xetile-iga-") as tmp:
        text = Path(tmp) / "k.text"
        text.write_bytes(zebin.text(kernel))
        proc = run([find_iga64(), "-d", f"-p={platform}", text])
        if proc.returncode != 0:
            raise ToolError(f"iga64 failed (exit {proc.returncode}):\n{output_text(proc)}")
        return proc.stdout.decode("utf-8", "replace")


def disassemble_zebin(zebin: ZebinLike, kernel: str) -> dict[str, str]:
    """ISA text keyed by kernel: ocloc's IGA when ocloc is usable, else iga64; without the
    ``illegal`` lines at the end (:func:`trim_padding`)."""
    path, _ = ocloc_status()
    if path is not None:
        try:
            return {k: trim_padding(text) for k, text in _disasm_with_ocloc(zebin).items()}
        except ToolError:
            pass  # fall back to iga64 below
    return {kernel: trim_padding(_disasm_with_iga64(zebin, kernel))}


def trim_padding(text: str) -> str:
    """``text`` without its trailing ``illegal`` lines: the zero bytes padding a kernel's
    ``.text`` after its last instruction, which IGA decodes as instructions."""
    lines = text.splitlines()
    end = len(lines)
    while end and lines[end - 1].strip() in ("illegal", ""):
        end -= 1
    return "\n".join(lines[:end]) + "\n" if end else ""
