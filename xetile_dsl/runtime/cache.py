"""The compiled-kernel cache: in memory, and on disk as plain files (no pickle).

Layout: ``<directory>/<key>/`` holds one file per blob plus ``manifest.json``
(``{"version": 1, "key": ..., "files": {name: sha256}}``).  An entry is written into a
temporary directory next to it and renamed into place under a file lock, so readers see
either nothing or a complete entry.  Every read verifies the checksums; a damaged entry is
deleted with a warning and reported as a miss, so the caller rebuilds it.  If the directory
cannot be created or written (read-only, full disk) the cache warns once and keeps working
in memory only (entries already on a read-only disk are still read).

The directory is ``XETILE_CACHE_DIR`` if set, else ``~/.cache/xetile_dsl/kernels``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


class CacheWarning(UserWarning):
    """Something was wrong with the disk cache; the cache carried on without it."""


def key_for(*parts) -> str:
    """A sha256 hex key over ``parts`` (str or bytes), each prefixed with its length."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, (bytes, bytearray)) else str(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def default_directory() -> Path:
    """``XETILE_CACHE_DIR`` or ``~/.cache/xetile_dsl/kernels``."""
    env = os.environ.get("XETILE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "xetile_dsl" / "kernels"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_name(what: str, name: str) -> None:
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or name == MANIFEST:
        raise ValueError(f"bad cache {what} {name!r}: use letters, digits, '_', '.', '-' "
                         f"(not starting with '.' or '-', not {MANIFEST!r})")


@dataclass
class CacheStats:
    """Counters; ``compiles`` is counted by the caller when it builds after a miss."""

    hits_memory: int = 0
    hits_disk: int = 0
    misses: int = 0
    compiles: int = 0
    writes: int = 0
    corrupt: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class KernelCache:
    """Blobs by key, in memory and (when possible) on disk."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else default_directory()
        self.memory: dict[str, dict[str, bytes]] = {}
        self.stats = CacheStats()
        self.writable = self._prepare_directory()
        self.readable = self.directory.is_dir() and os.access(self.directory, os.R_OK | os.X_OK)

    @property
    def disk_ok(self) -> bool:
        """True while entries are also written to disk."""
        return self.writable

    @disk_ok.setter
    def disk_ok(self, value: bool) -> None:
        self.writable = value

    # --- disk state ------------------------------------------------------------------
    def _prepare_directory(self) -> bool:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.directory, prefix=".probe-", delete=True)
            probe.close()
        except OSError as exc:
            self._degrade(f"cannot use cache directory {self.directory} ({exc})")
            return False
        return True

    def _degrade(self, why: str) -> None:
        warnings.warn(f"xetile_dsl kernel cache: {why}; keeping new compiled kernels in memory only",
                      CacheWarning, stacklevel=3)
        self.writable = False

    def _lock(self, key: str):
        from filelock import FileLock

        locks = self.directory / ".locks"
        locks.mkdir(exist_ok=True)
        return FileLock(str(locks / f"{key}.lock"), timeout=60)

    # --- the interface ---------------------------------------------------------------
    def get(self, key: str) -> dict[str, bytes] | None:
        """The blobs stored under ``key``, or None (a miss)."""
        _check_name("key", key)
        files = self.memory.get(key)
        if files is not None:
            self.stats.hits_memory += 1
            return dict(files)
        files = self._read(key) if self.readable else None
        if files is None:
            self.stats.misses += 1
            return None
        self.stats.hits_disk += 1
        self.memory[key] = files
        return dict(files)

    def put(self, key: str, files: dict[str, bytes], meta: dict | None = None) -> None:
        """Store ``files`` under ``key`` (memory always, disk when possible, atomically).

        ``meta`` (JSON-able, e.g. kernel name and target) is kept in the manifest for listings."""
        _check_name("key", key)
        for name, data in files.items():
            _check_name("file name", name)
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"cache file {name!r} must be bytes, got {type(data).__name__}")
        files = {n: bytes(d) for n, d in files.items()}
        self.memory[key] = files
        if self.disk_ok:
            try:
                self._write(key, files, meta or {})
                self.stats.writes += 1
            except OSError as exc:
                self._degrade(f"cannot write entry {key[:16]}… in {self.directory} ({exc})")

    # --- disk entries ----------------------------------------------------------------
    def _read(self, key: str) -> dict[str, bytes] | None:
        entry = self.directory / key
        if not entry.is_dir():
            return None
        try:
            manifest = json.loads((entry / MANIFEST).read_text())
            files = {name: (entry / name).read_bytes() for name in manifest["files"]}
            bad = [n for n, digest in manifest["files"].items() if _sha256(files[n]) != digest]
            if manifest.get("version") != FORMAT_VERSION or manifest.get("key") != key or bad:
                raise ValueError(f"checksum mismatch in {bad}" if bad else "manifest does not match")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self._discard(key, f"{type(exc).__name__}: {exc}")
            return None
        return files

    def _discard(self, key: str, why: str) -> None:
        """Delete a damaged entry (with a warning) so the caller rebuilds it."""
        self.stats.corrupt += 1
        warnings.warn(f"xetile_dsl kernel cache: entry {key[:16]}… in {self.directory} is damaged ({why}); "
                      "deleting it, the kernel will be rebuilt", CacheWarning, stacklevel=4)
        try:
            with self._lock(key):
                shutil.rmtree(self.directory / key, ignore_errors=True)
        except OSError:
            pass

    def _write(self, key: str, files: dict[str, bytes], meta: dict) -> None:
        manifest = {"version": FORMAT_VERSION, "key": key, "created": time.time(), "meta": meta,
                    "files": {n: _sha256(d) for n, d in sorted(files.items())}}
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=self.directory))
        try:
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
            with self._lock(key):
                final = self.directory / key
                if final.exists():
                    shutil.rmtree(final, ignore_errors=True)
                os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    # --- for the command line --------------------------------------------------------
    def entries(self) -> list[dict]:
        """One dict per disk entry: key, files, bytes, created (from its manifest)."""
        if not self.readable or not self.directory.is_dir():
            return [{"key": k, "files": sorted(f), "bytes": sum(map(len, f.values())), "created": None,
                     "where": "memory", "name": "?", "target": "?"} for k, f in self.memory.items()]
        out = []
        for entry in sorted(self.directory.iterdir()):
            if entry.name.startswith(".") or not entry.is_dir() or not (entry / MANIFEST).exists():
                continue                      # locks, temporaries, tuning memos, the ICD folder
            try:
                manifest = json.loads((entry / MANIFEST).read_text())
                names = sorted(manifest["files"])
                size = sum((entry / n).stat().st_size for n in names)
                created, meta = manifest.get("created"), manifest.get("meta") or {}
            except (OSError, ValueError, KeyError, TypeError):
                names, size, created, meta = [], 0, None, {}
            out.append({"key": entry.name, "files": names, "bytes": size, "created": created, "where": "disk",
                        "name": meta.get("name", "?"), "target": meta.get("target", "?")})
        return out

    def clear(self) -> int:
        """Remove every entry (memory and disk) and the autotuner's remembered choices;
        returns how many kernel entries went."""
        self.memory.clear()
        if not self.disk_ok or not self.directory.is_dir():
            return 0
        count = 0
        shutil.rmtree(self.directory / ".autotune", ignore_errors=True)   # remembered autotuning choices
        for entry in self.directory.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):   # leave locks, in-flight temps
                shutil.rmtree(entry, ignore_errors=True)
                count += 1
        return count
