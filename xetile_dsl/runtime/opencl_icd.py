"""Point the OpenCL ICD loader at Intel's CPU runtime from the pip package.

The wheel ``intel-opencl-rt`` installs ``libintelocl.so`` under ``<prefix>/lib`` but its
ICD file names an unexpanded build path, so the loader never finds it.  We write our own
ICD file and set the loader's variables *before* dpctl or pyopencl first loads OpenCL.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

_done = False


def find_intel_cpu_runtime() -> Path | None:
    """Path of the pip-installed libintelocl.so, or None."""
    for prefix in {sys.prefix, sys.base_prefix}:
        lib = Path(prefix) / "lib" / "libintelocl.so"
        if lib.exists():
            return lib
    return None


def setup_intel_cpu_icd() -> Path | None:
    """Make the Intel OpenCL CPU runtime visible to dpctl and pyopencl (idempotent)."""
    global _done
    lib = find_intel_cpu_runtime()
    if _done or lib is None:
        return lib
    _done = True
    vendors = Path(os.environ.get("XETILE_CACHE_DIR", Path.home() / ".cache" / "xetile_dsl")) / "icd"
    try:
        vendors.mkdir(parents=True, exist_ok=True)
        (vendors / "intel-cpu-xetile.icd").write_text(f"{lib}\n")
        _prepend("OCL_ICD_VENDORS", str(vendors))
    except OSError:
        pass
    _prepend("OCL_ICD_FILENAMES", str(lib))
    _prepend("LD_LIBRARY_PATH", str(lib.parent))
    return lib


def _prepend(var: str, value: str) -> None:
    old = os.environ.get(var)
    if not old:
        os.environ[var] = value
    elif value not in old.split(os.pathsep if var != "OCL_ICD_FILENAMES" else ":"):
        os.environ[var] = f"{value}:{old}"
