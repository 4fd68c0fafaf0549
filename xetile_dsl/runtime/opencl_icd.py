"""Point the OpenCL ICD loader at Intel's CPU runtime from the pip package.

The wheel ``intel-opencl-rt`` installs ``libintelocl.so`` under ``<prefix>/lib`` but its
ICD file names an unexpanded build path, so the loader never finds it.  We write our own
ICD file and set the loader's variables *before* dpctl or pyopencl first loads OpenCL.
"""
from __future__ import annotations

import os
import sys
import tempfile
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
    vendors = _vendors_dir()
    if vendors is not None:
        os.environ["OCL_ICD_VENDORS"] = str(vendors)
    _prepend("OCL_ICD_FILENAMES", str(lib))
    _prepend("LD_LIBRARY_PATH", str(lib.parent))
    return lib


def _vendors_dir() -> Path | None:
    """A directory of ICD files: ours plus every one the loader would have seen.

    ocl-icd (pyopencl's loader) reads ONE vendors directory, so we cannot append ours to
    the system's; we copy the system's ICD files (e.g. a real GPU's) next to ours."""
    lib = find_intel_cpu_runtime()
    sources = [Path(p) for p in (os.environ.get("OCL_ICD_VENDORS"), "/etc/OpenCL/vendors") if p]
    for base in (Path.home() / ".cache" / "xetile_dsl", Path(tempfile.gettempdir()) / f"xetile_dsl-{os.getuid()}"):
        target = base / "icd"
        try:
            target.mkdir(parents=True, exist_ok=True)
            for src in sources:
                if src.is_dir() and src.resolve() != target.resolve():
                    for icd in src.glob("*.icd"):
                        if "intel-cpu" not in icd.name and "fpga" not in icd.name:
                            (target / icd.name).write_text(icd.read_text())
            (target / "intel-cpu-xetile.icd").write_text(f"{lib}\n")
            return target
        except OSError:
            continue
    return None


def _prepend(var: str, value: str) -> None:
    old = os.environ.get(var)
    if not old:
        os.environ[var] = value
    elif value not in old.split(os.pathsep if var != "OCL_ICD_FILENAMES" else ":"):
        os.environ[var] = f"{value}:{old}"
