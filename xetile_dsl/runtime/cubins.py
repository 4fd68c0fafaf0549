"""The cubins of PTX modules, kept in the kernel cache (runtime/cache.py).

Where a ``ptxas`` is found (:func:`find_ptxas`: ``$XETILE_PTXAS``, PATH, the
``nvidia-cuda-nvcc`` wheel (CUDA 12's ``nvidia/cuda_nvcc``, 13's ``nvidia/cu13``), the one
Triton ships), a module's PTX is assembled by it into
a cubin for the GPU's architecture once per ptxas release, driver version and
architecture, and stored under a key of those and the PTX. A later process loads the
cubin and skips the driver's PTX compile. An entry that is not an ELF image is rebuilt.
So is one the driver refuses to load (:func:`discard`). Without a ptxas, or where it
fails, the PTX itself is loaded (the driver compiles it, and keeps the result in its own
compute cache).

The driver's linker (``cuLinkCreate`` / ``cuLinkAddData`` / ``cuLinkComplete``) is not
used: on an H200 its cubins of the same PTX ran the sm90 GEMM about 25 % slower and
layer_norm 9 % slower than the driver's JIT or ptxas made them (80 registers a thread
instead of 62; ``benchmarks/module_load_cuda.py``, decision 064)."""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

from .. import knobs
from .cache import shared_cache

CUBIN = "module.cubin"
_ELF = b"\x7fELF"
#: seconds one ptxas run may take before the PTX is loaded instead
PTXAS_TIMEOUT = 300


def cubin_key(ptx: str, driver_version: int, capability: tuple[int, int], assembler: str = "") -> str:
    text = f"cubin\0{assembler}\0{driver_version}\0sm_{capability[0]}{capability[1]}\0{ptx}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def find_ptxas() -> str | None:
    """The ptxas that assembles cubins: ``$XETILE_PTXAS`` (which must exist), else
    ``ptxas`` on PATH, else the ``nvidia-cuda-nvcc`` wheel's, else Triton's; None
    where there is none (modules then load their PTX)."""
    given = knobs.PTXAS.get()
    if given is not None:
        return str(given) if os.access(given, os.X_OK) else None
    wheels = (("nvidia.cuda_nvcc", "bin"), ("nvidia.cu13", "bin"), ("triton.backends.nvidia", "bin"))
    return shutil.which("ptxas") or next(
        (path for package, folder in wheels
         if (path := knobs.installed_file(package, folder, "ptxas", executable=True))), None)


@functools.lru_cache(maxsize=8)
def ptxas_release(path: str) -> str:
    """What ``path --version`` says (a cubin's key holds it: another ptxas, another
    cubin); "" where it does not run."""
    try:
        run = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return run.stdout.strip() if run.returncode == 0 else ""


def ptxas_arch(ptx: str, capability: tuple[int, int]) -> str:
    """``-arch`` of the GPU of ``capability`` for ``ptx``: ``sm_XY``, with the ``a``
    suffix where the PTX's ``.target`` holds architecture-specific features (sm_90a)."""
    target = next((line.split()[1].rstrip(",") for line in ptx.splitlines() if line.startswith(".target")), "")
    return f"sm_{capability[0]}{capability[1]}" + ("a" if target.endswith("a") else "")


def assemble(ptx: str, arch: str, ptxas: str) -> bytes:
    """The cubin ``ptxas -arch=arch`` makes of ``ptx``; RuntimeError with ptxas's own
    message where it fails."""
    with tempfile.TemporaryDirectory(prefix="xetile-ptxas-") as folder:
        src, out = os.path.join(folder, "module.ptx"), os.path.join(folder, CUBIN)
        with open(src, "w") as f:
            f.write(ptx)
        run = subprocess.run([ptxas, f"-arch={arch}", src, "-o", out], capture_output=True, text=True,
                             timeout=PTXAS_TIMEOUT, check=False)
        if run.returncode != 0:
            raise RuntimeError(f"ptxas -arch={arch}: {run.stderr.strip()[:500]}")
        with open(out, "rb") as f:
            return f.read()


def _check(files: dict[str, bytes]) -> str | None:
    data = files.get(CUBIN, b"")
    return None if data[:4] == _ELF else "not an ELF cubin"


def module_image(ptx: str, key: str, make) -> tuple[bytes, bool]:
    """(what ``cuModuleLoadData`` takes for ``ptx``, whether it is a cached or new cubin):
    the cubin stored under ``key``, else ``make(ptx)``'s (stored for the next process),
    else the PTX (NUL-terminated) where that fails."""
    cache = shared_cache()
    found = cache.get(key, check=_check)
    if found is not None:
        return found[CUBIN], True
    try:
        cubin = make(ptx)
    except Exception:  # noqa: BLE001 - ptxas failed or is gone: the driver compiles the PTX at load
        cubin = None
    if not cubin or cubin[:4] != _ELF:
        return ptx.encode() + b"\0", False
    cache.put(key, {CUBIN: cubin}, {"what": "cubin"})
    return cubin, True


def discard(key: str, why: str) -> None:
    """Forget the cubin under ``key`` (the driver refused to load it)."""
    shared_cache().discard(key, why)
