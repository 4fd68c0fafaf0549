"""Built device programs on disk, so that a new process loads a kernel in milliseconds.

Building SPIR-V into a device program is the slow step of a first launch (seconds for a
GEMM on the OpenCL CPU runtime); loading the program binary the runtime produced takes
milliseconds.  The binary is stored in the kernel cache (runtime/cache.py: plain files,
checksummed manifest, atomic writes) under a key of its own: the SPIR-V's hash, the build
options, and the device and driver that built it (a binary is only valid there).  Beside
it, ``program.json`` repeats what the key covers; an entry is loaded only when that record
matches exactly, and a binary the runtime then refuses is deleted with a warning and the
program rebuilt from SPIR-V -- a cached binary is never trusted beyond what the runtime
itself checks when loading it.

``XETILE_PROGRAM_CACHE=0`` turns the binary cache off (every process builds from SPIR-V).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from .. import knobs
from ..errors import BuildError
from .cache import KernelCache, default_directory
from .cache_key import key_for

BINARY_FILE = "program.bin"
RECORD_FILE = "program.json"
#: first part of every program key; changes when what the key covers changes
KEY_FORMAT = "xetile_dsl program binary 1"

#: programs loaded from a stored binary, built from SPIR-V, and stored binaries refused
stats = {"loaded": 0, "built": 0, "refused": 0}


class RefusedBinary(BuildError):
    """The runtime would not load a stored program binary (caught where the binary is
    loaded: the program is rebuilt from SPIR-V)."""


@dataclass(frozen=True)
class ProgramKey:
    """The cache key of one built program and the record stored (and compared) beside it."""

    key: str
    record: dict


def program_key(device: dict, spirv: bytes, options: str) -> ProgramKey:
    """The key of ``spirv`` built with ``options`` for ``device`` (its name, driver version,
    platform and API as a dict of strings)."""
    record = {"format": KEY_FORMAT, "device": dict(sorted(device.items())), "options": options,
              "spirv_sha256": hashlib.sha256(spirv).hexdigest()}
    return ProgramKey(key_for(json.dumps(record, sort_keys=True)), record)


_CACHE: KernelCache | None = None


def _cache() -> KernelCache:
    """The kernel cache's directory, with counters of its own (runtime/cache.py)."""
    global _CACHE
    if _CACHE is None or _CACHE.directory != default_directory():
        _CACHE = KernelCache()
    return _CACHE


def enabled() -> bool:
    """False when ``XETILE_PROGRAM_CACHE=0``."""
    return knobs.PROGRAM_CACHE.get()


def load(pk: ProgramKey) -> bytes | None:
    """The stored binary of ``pk``, or None (no entry, or one whose record differs)."""
    files = _cache().get(pk.key, check=lambda f: _record_problem(f, pk))
    return None if files is None else files[BINARY_FILE]


def store(pk: ProgramKey, binary: bytes, kernel_name: str) -> None:
    """Keep ``binary`` (memory always, disk when the cache can write)."""
    _cache().put(pk.key, {BINARY_FILE: binary, RECORD_FILE: json.dumps(pk.record, sort_keys=True).encode()},
                       meta={"name": kernel_name, "target": "program binary"})


def reject(pk: ProgramKey, why: str) -> None:
    """The runtime refused the stored binary: delete the entry (with a warning)."""
    stats["refused"] += 1
    _cache().discard(pk.key, f"the runtime refused the program binary ({why})")


def _record_problem(files: dict[str, bytes], pk: ProgramKey) -> str | None:
    """Why an entry read from disk is not the program ``pk`` names, or None."""
    if set(files) != {BINARY_FILE, RECORD_FILE}:
        return f"expected files {BINARY_FILE} and {RECORD_FILE}, found {sorted(files)}"
    try:
        record = json.loads(files[RECORD_FILE])
    except ValueError as exc:
        return f"{RECORD_FILE}: {exc}"
    if record != pk.record:
        return f"{RECORD_FILE} describes another program"
    if not files[BINARY_FILE]:
        return "empty program binary"
    return None
