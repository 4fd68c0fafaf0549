"""Intel's offline compiler (ocloc): find it, compile SPIR-V to a zebin, check the ISA.

"Build succeeded" proves little: IGC silently drops builtins it does not know, or leaves
them as external ``calla`` calls (the Xe codegen reference §1).  So every check here reads
the machine code: DPAS present, 2D-block messages present (PVC) or absent (DG2), no
``calla``, no undefined symbols, no spills.

Environment:
  ``XETILE_OCLOC``          path of an ocloc to use (overrides the search)
  ``XETILE_TOOLS_DIR``      tools folder of ``python -m xetile_dsl install-tools``
                            (default ``<repo>/tools-cache/igc``; ocloc is ``bin/ocloc``)
  ``XETILE_IGA64``          path of iga64 (default: ``iga64`` on PATH)
  ``XETILE_REQUIRE_OCLOC=1`` tests that need ocloc fail instead of skipping
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ._common import ToolError, ToolNotFound, output_text, run
from .disasm import disassemble_zebin
from .isa import hot_loop, loops  # noqa: F401 -- loop finding lives with the listing parser
from .locate import (ISA_REQUIRED_ENV, MIN_OCLOC_VERSION, find_iga64, find_ocloc, isa_required, ocloc_status,
                     ocloc_version, tools_dir)
from .zebin import PATCH_SYMBOL, Zebin

__all__ = [
    "OclocError", "ToolError", "ToolNotFound", "Zebin", "PATCH_SYMBOL", "MIN_OCLOC_VERSION",
    "find_ocloc", "find_iga64", "ocloc_version", "ocloc_status", "isa_required", "ISA_REQUIRED_ENV",
    "compile_spirv", "disassemble_zebin", "count", "check_isa", "tools_dir",
    "DPAS", "LOAD_BLOCK2D", "STORE_BLOCK2D", "CALLA", "hot_loop", "loops",
]

#: ISA line patterns for :func:`count` (IGA prints 2D-block sends' kind in a comment).
DPAS = r"\bdpasw?\b"
LOAD_BLOCK2D = r"\bload_block2d\b"
STORE_BLOCK2D = r"\bstore_block2d\b"
CALLA = r"\bcalla\b"


class OclocError(ToolError):
    """ocloc rejected the module; ``log`` is its full output, ``returncode`` its status."""

    def __init__(self, message: str, returncode: int, log: str) -> None:
        super().__init__(f"{message} (exit {returncode}):\n{log}")
        self.returncode = returncode
        self.log = log


def compile_spirv(spirv: bytes, device: str, options: str = "") -> Zebin:
    """Compile a SPIR-V module with ocloc for ``device`` (e.g. "pvc", "dg2-g10").

    Raises OclocError with ocloc's log on a non-zero exit.  The log (warnings such as
    spills) is kept as ``Zebin.build_log``.
    """
    ocloc = find_ocloc()
    with tempfile.TemporaryDirectory(prefix="xetile-ocloc-") as tmp:
        src = Path(tmp) / "k.spv"
        src.write_bytes(spirv)
        argv = [ocloc, "compile", "-file", src, "-spirv_input", "-device", device,
                "-out_dir", Path(tmp) / "out", "-output", "k"]
        if options:
            argv += ["-options", options]
        proc = run(argv, cwd=tmp)
        log = output_text(proc)
        if proc.returncode != 0:
            raise OclocError(f"ocloc failed to compile for {device}", proc.returncode, log)
        bins = sorted((Path(tmp) / "out").glob("k*.bin"))
        if not bins:
            raise OclocError(f"ocloc wrote no zebin for {device}", proc.returncode, log)
        return Zebin(bins[0].read_bytes(), device=device, build_log=log)


def count(isa: str, mnemonic_regex: str) -> int:
    """Number of ISA lines in which ``mnemonic_regex`` matches (e.g. DPAS, LOAD_BLOCK2D)."""
    pat = re.compile(mnemonic_regex)
    return sum(1 for line in isa.splitlines() if pat.search(line))


def _block2d_problems(isa: str, expect_block2d: bool | None) -> list[str]:
    """Problems with 2D-block messages given the expectation (None: no check)."""
    n = count(isa, LOAD_BLOCK2D) + count(isa, STORE_BLOCK2D)
    if expect_block2d is True and n == 0:
        return ["no load_block2d/store_block2d in ISA (2D block IO dropped or not emitted)"]
    if expect_block2d is False and n:
        return [f"{n} unexpected load_block2d/store_block2d in ISA (target has no 2D block IO)"]
    return []


def check_isa(zebin: Zebin, kernel: str, expect_dpas: bool = True,
              expect_block2d: bool | None = None, expect_simd: int | None = None) -> list[str]:
    """Problems found in ``kernel``'s machine code; an empty list means it passed.

    Checks: kernel present, spill_size 0, no ``calla``, no undefined symbols (other than
    IGC's patch symbol), DPAS present iff ``expect_dpas`` (None: no check), 2D-block
    messages present/absent per ``expect_block2d`` (None: no check), and SIMD width.
    """
    if kernel not in zebin.kernels:
        return [f"kernel {kernel!r} not in zebin (kernels: {zebin.kernels})"]
    isa, problems = zebin.isa_text(kernel), []
    if zebin.spill_size(kernel):
        problems.append(f"register spill: spill_size={zebin.spill_size(kernel)} bytes")
    if count(isa, CALLA):
        problems.append(f"{count(isa, CALLA)} calla (unresolved external call) in ISA")
    if zebin.undefined_symbols():
        problems.append(f"undefined symbols: {', '.join(zebin.undefined_symbols())}")
    n_dpas = count(isa, DPAS)
    if expect_dpas and not n_dpas:
        problems.append("no dpas in ISA (DPAS builtin dropped or unresolved)")
    elif expect_dpas is False and n_dpas:
        problems.append(f"{n_dpas} unexpected dpas in ISA")
    problems += _block2d_problems(isa, expect_block2d)
    simd = zebin.execution_env(kernel).get("simd_size")
    if expect_simd is not None and simd != expect_simd:
        problems.append(f"simd_size {simd}, expected {expect_simd}")
    return problems
