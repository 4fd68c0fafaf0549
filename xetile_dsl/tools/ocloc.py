"""Intel's offline compiler (ocloc): find it, compile SPIR-V to a zebin, check the ISA.

"Build succeeded" proves little: IGC silently drops builtins it does not know, or leaves
them as external ``calla`` calls (xe-codegen-reference.md §1).  So every check here reads
the machine code: DPAS present, 2D-block messages present (PVC) or absent (DG2), no
``calla``, no undefined symbols, no spills.

Environment:
  ``XETILE_OCLOC``          path of an ocloc to use (overrides the search)
  ``XETILE_TOOLS_DIR``      tools folder of scripts/install-test-tools.sh
                            (default ``<repo>/tools-cache/igc``; ocloc is ``bin/ocloc``)
  ``XETILE_IGA64``          path of iga64 (default: ``iga64`` on PATH)
  ``XETILE_REQUIRE_OCLOC=1`` tests that need ocloc fail instead of skipping
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from .. import knobs
from ._common import ToolError, ToolNotFound, output_text, repo_root, run
from .isa import hot_loop, loops  # noqa: F401 -- loop finding lives with the listing parser
from .zebin import PATCH_SYMBOL, Zebin
from ..targets import TARGETS

__all__ = [
    "OclocError", "ToolError", "ToolNotFound", "Zebin", "PATCH_SYMBOL", "MIN_OCLOC_VERSION",
    "find_ocloc", "find_iga64", "ocloc_version", "ocloc_status", "isa_required", "ISA_REQUIRED_ENV",
    "compile_spirv", "disassemble_zebin", "count", "check_isa",
    "DPAS", "LOAD_BLOCK2D", "STORE_BLOCK2D", "CALLA", "hot_loop", "loops",
]

#: Oldest ocloc release accepted.  Debian 12's 22.43 (IGC 1.0.12504) silently drops the
#: ``intel_sub_group_2d_block_*`` builtins; 26.27 (IGC 2.40) is the verified instrument.
MIN_OCLOC_VERSION = (24, 0)

#: ISA line patterns for :func:`count` (IGA prints 2D-block sends' kind in a comment).
DPAS = r"\bdpasw?\b"
LOAD_BLOCK2D = r"\bload_block2d\b"
STORE_BLOCK2D = r"\bstore_block2d\b"
CALLA = r"\bcalla\b"

#: ocloc device family -> IGA platform, for disassembling with Debian's iga64.
_IGA_PLATFORMS = {t.ocloc_device.split("-")[0]: t.iga_platform for t in TARGETS.values() if t.iga_platform}
_IGA_PLATFORMS["acm"] = "xehpg"


class OclocError(ToolError):
    """ocloc rejected the module; ``log`` is its full output, ``returncode`` its status."""

    def __init__(self, message: str, returncode: int, log: str) -> None:
        super().__init__(f"{message} (exit {returncode}):\n{log}")
        self.returncode = returncode
        self.log = log


#: The ISA_REQUIRED knob: when this variable is "1", tests needing ocloc fail, not skip.
ISA_REQUIRED_ENV = knobs.REQUIRE_OCLOC.name


def isa_required() -> bool:
    """The ISA_REQUIRED knob (``XETILE_REQUIRE_OCLOC=1``): missing ocloc is an error, not a skip."""
    return knobs.REQUIRE_OCLOC.get()


def tools_dir() -> Path:
    """Folder written by scripts/install-test-tools.sh."""
    return knobs.TOOLS_DIR.get() or repo_root() / "tools-cache" / "igc"


def ocloc_version(path: str | Path) -> tuple[int, ...] | None:
    """ocloc's release as a tuple, from ``--version`` or the binary's name; None if unknown.

    Debian 12's ocloc 22.43 has no ``--version`` (it answers "Invalid option").
    """
    proc = run([path, "--version"])
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", output_text(proc)) if proc.returncode == 0 else None
    if m is None:
        m = re.search(r"ocloc-(\d+)\.(\d+)(?:\.(\d+))?", Path(path).resolve().name)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def _check_candidate(path: Path) -> None:
    """Raise ToolNotFound unless ``path`` is a runnable ocloc at least MIN_OCLOC_VERSION."""
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ToolNotFound(f"{path} is not an executable file")
    version = ocloc_version(path)
    want = ".".join(map(str, MIN_OCLOC_VERSION))
    if version is None:
        raise ToolNotFound(f"ocloc at {path} is too old (no usable --version; need >= {want}). "
                           "Debian 12's ocloc 22.x silently drops 2D-block builtins; "
                           "run scripts/install-test-tools.sh")
    if version < MIN_OCLOC_VERSION:
        got = ".".join(map(str, version))
        raise ToolNotFound(f"ocloc at {path} is too old ({got}; need >= {want}): it silently "
                           "drops 2D-block builtins; run scripts/install-test-tools.sh")


@lru_cache(maxsize=8)
def _find_ocloc_cached(env_ocloc: str, tools: str, path_env: str) -> Path:
    """Search for ocloc; the arguments are the environment it depends on (cache key)."""
    if env_ocloc:
        _check_candidate(Path(env_ocloc))
        return Path(env_ocloc)
    tried = []
    for cand in (Path(tools) / "bin" / "ocloc", shutil.which("ocloc", path=path_env)):
        if cand is None:
            continue
        try:
            _check_candidate(Path(cand))
            return Path(cand)
        except ToolNotFound as exc:
            tried.append(str(exc))
    detail = "; ".join(tried) or f"nothing at {tools}/bin/ocloc and no ocloc on PATH"
    raise ToolNotFound(f"no usable ocloc: {detail}. Install with scripts/install-test-tools.sh "
                       "or set XETILE_OCLOC")


def find_ocloc() -> Path:
    """Path of a usable ocloc (XETILE_OCLOC, else the tools folder, else PATH).

    Raises ToolNotFound saying why (missing, or "too old" for Debian 12's 22.x).
    """
    return _find_ocloc_cached(str(knobs.OCLOC.get() or ""), str(tools_dir()),
                              os.environ.get("PATH", ""))


def ocloc_status() -> tuple[Path | None, str]:
    """(path, "") when ocloc is usable, else (None, reason)."""
    try:
        return find_ocloc(), ""
    except ToolNotFound as exc:
        return None, str(exc)


def find_iga64() -> Path:
    """Path of iga64 (XETILE_IGA64 or PATH); raises ToolNotFound."""
    found = knobs.IGA64.get() or shutil.which("iga64")
    if not found:
        raise ToolNotFound("iga64 not found: apt-get install libigc-tools (Debian 12)")
    return Path(found)


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


def _disasm_with_ocloc(zebin: Zebin) -> dict[str, str]:
    """All kernels' ISA via ``ocloc disasm -dump`` (no -device: uses the bundled IGA)."""
    with tempfile.TemporaryDirectory(prefix="xetile-disasm-") as tmp:
        binp, dump = Path(tmp) / "k.bin", Path(tmp) / "dump"
        binp.write_bytes(zebin.data)
        proc = run([find_ocloc(), "disasm", "-file", binp, "-dump", dump], cwd=tmp)
        out = {k: (dump / f".text.{k}.asm") for k in zebin.kernels}
        if proc.returncode != 0 or not all(p.is_file() for p in out.values()):
            raise ToolError(f"ocloc disasm failed (exit {proc.returncode}):\n{output_text(proc)}")
        return {k: p.read_text(errors="replace") for k, p in out.items()}


def _disasm_with_iga64(zebin: Zebin, kernel: str) -> str:
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


def disassemble_zebin(zebin: Zebin, kernel: str) -> dict[str, str]:
    """ISA text keyed by kernel: ocloc's IGA when ocloc is usable, else iga64."""
    path, _ = ocloc_status()
    if path is not None:
        try:
            return _disasm_with_ocloc(zebin)
        except ToolError:
            pass  # fall back to iga64 below
    return {kernel: _disasm_with_iga64(zebin, kernel)}


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
