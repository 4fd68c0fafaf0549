"""The cubins of PTX modules, kept in the kernel cache (runtime/cache.py).

A module's PTX is linked into a cubin by the CUDA driver's own linker (``cuLinkCreate``,
``cuLinkAddData``, ``cuLinkComplete``) once per driver version and GPU architecture.
The cubin is stored under a key of those two and the PTX. A later process loads the
cubin and skips the driver's PTX compile. An entry that is not an ELF image is rebuilt.
So is one the driver refuses to load (:func:`discard`). Where the linker is missing or
fails, the PTX itself is loaded, as without this cache."""
from __future__ import annotations

import ctypes
import hashlib

from .cache import shared_cache

CUBIN = "module.cubin"
_ELF = b"\x7fELF"


def cubin_key(ptx: str, driver_version: int, capability: tuple[int, int]) -> str:
    text = f"cubin\0{driver_version}\0sm_{capability[0]}{capability[1]}\0{ptx}"
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _check(files: dict[str, bytes]) -> str | None:
    data = files.get(CUBIN, b"")
    return None if data[:4] == _ELF else "not an ELF cubin"


def module_image(ptx: str, key: str, link) -> tuple[bytes, bool]:
    """(what ``cuModuleLoadData`` takes for ``ptx``, whether it is a cached or new cubin):
    the cubin stored under ``key``, else ``link(ptx)``'s (stored for the next process),
    else the PTX (NUL-terminated) where linking fails."""
    cache = shared_cache()
    found = cache.get(key, check=_check)
    if found is not None:
        return found[CUBIN], True
    try:
        cubin = link(ptx)
    except Exception:  # noqa: BLE001 - no linker (or it refused): the driver compiles the PTX at load
        cubin = None
    if not cubin or cubin[:4] != _ELF:
        return ptx.encode() + b"\0", False
    cache.put(key, {CUBIN: cubin}, {"what": "cubin"})
    return cubin, True


def discard(key: str, why: str) -> None:
    """Forget the cubin under ``key`` (the driver refused to load it)."""
    shared_cache().discard(key, why)


def link(driver, check, ptx: str) -> bytes:
    """The cubin of ``ptx`` from the driver's linker (a context must be current)."""
    data = ptx.encode() + b"\0"
    state = check(driver.cuLinkCreate(0, [], []))
    try:
        check(driver.cuLinkAddData(state, driver.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data), b"module.ptx",
                                   0, [], []))
        address, size = check(driver.cuLinkComplete(state))
        return ctypes.string_at(int(address), int(size))     # (the linker owns it until destroyed)
    finally:
        driver.cuLinkDestroy(state)
