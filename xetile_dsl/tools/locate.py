"""Finding the external tools: ocloc (a release new enough to keep 2D-block builtins) and
iga64.  See :mod:`.ocloc` for the environment variables."""
from __future__ import annotations

import os
import re
import shutil
from functools import lru_cache
from pathlib import Path

from .. import knobs
from ._common import ToolNotFound, output_text, repo_root, run

#: Oldest ocloc release accepted.  Debian 12's 22.43 (IGC 1.0.12504) silently drops the
#: ``intel_sub_group_2d_block_*`` builtins; 26.27 (IGC 2.40) is the verified instrument.
MIN_OCLOC_VERSION = (24, 0)


#: The ISA_REQUIRED knob: when this variable is "1", tests needing ocloc fail, not skip.
ISA_REQUIRED_ENV = knobs.REQUIRE_OCLOC.name


def isa_required() -> bool:
    """The ISA_REQUIRED knob (``XETILE_REQUIRE_OCLOC=1``): missing ocloc is an error, not a skip."""
    return knobs.REQUIRE_OCLOC.get()


#: how to get the tools, for messages (the installer ships in the package: a wheel has no scripts/)
INSTALL_HINT = ("get it with `python -m xetile_dsl install-tools` (ocloc and iga64, through apt-get, as root), "
                "or point XETILE_OCLOC at an ocloc >= 24")


def installer_script() -> Path:
    """The tool installer shipped in the package (scripts/install-test-tools.sh runs it)."""
    return Path(__file__).resolve().with_name("install-test-tools.sh")


def tools_dir() -> Path:
    """Folder the tool installer writes: XETILE_TOOLS_DIR, else ``<repo>/tools-cache/igc`` in
    a source checkout, else ``~/.cache/xetile_dsl/tools`` (not inside site-packages)."""
    chosen = knobs.TOOLS_DIR.get()
    if chosen:
        return chosen
    root = repo_root()
    if (root / "pyproject.toml").is_file() and (root / "xetile_dsl").is_dir():
        return root / "tools-cache" / "igc"
    return Path.home() / ".cache" / "xetile_dsl" / "tools"


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
                           f"Debian 12's ocloc 22.x silently drops 2D-block builtins; {INSTALL_HINT}")
    if version < MIN_OCLOC_VERSION:
        got = ".".join(map(str, version))
        raise ToolNotFound(f"ocloc at {path} is too old ({got}; need >= {want}): it silently "
                           f"drops 2D-block builtins; {INSTALL_HINT}")


@lru_cache(maxsize=8)
def _find_ocloc_cached(env_ocloc: str, tools: str, path_env: str) -> Path:
    """Search for ocloc; the arguments are the environment it depends on (cache key)."""
    if env_ocloc:
        _check_candidate(Path(env_ocloc))
        return Path(env_ocloc)
    tried = []
    for cand in (Path(tools) / "bin" / "ocloc", shutil.which("ocloc", path=path_env)):
        if cand is None or not Path(cand).exists():
            continue
        try:
            _check_candidate(Path(cand))
            return Path(cand)
        except ToolNotFound as exc:
            tried.append(str(exc))
    if not tried:
        raise ToolNotFound(f"ocloc (Intel's offline compiler) was not found: not in XETILE_TOOLS_DIR "
                           f"({tools}/bin) nor on PATH; {INSTALL_HINT}")
    raise ToolNotFound(f"no usable ocloc: {'; '.join(tried)}")


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
