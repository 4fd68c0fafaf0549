"""The compiled-kernel cache: in memory, and on disk as plain files (no pickle).

Layout: ``<directory>/<key>/`` holds one file per blob plus ``manifest.json``
(``{"version": 1, "key": ..., "files": {name: sha256}}``).  An entry is written into a
temporary directory next to it and renamed into place under the entry's lock (an old entry
is first renamed aside, then removed), so readers see either nothing or a complete entry.

Reads open the entry directory once and read every file relative to it, so they see one
entry, never a mix of two.  A file that vanishes or a checksum that fails while a writer
replaces the entry is a reason to read again (the new entry), not damage; damage is a
failed check on an entry that is still in place, and such an entry is deleted with a
warning and reported as a miss, so the caller rebuilds it.  ``get(key, check=...)`` lets
the caller refuse an entry whose content it cannot trust (it is rebuilt, with a warning).
The cache repairs what stands in its way: a file where an entry's directory or the
``.locks`` directory belongs is removed.

Locks (runtime/entry_lock.py) name their holder: a lock left by a dead process is broken,
and a live holder is waited for at most ``lock_timeout`` seconds (``XETILE_CACHE_LOCK_TIMEOUT``,
default 10), after which the kernel is kept in memory with a warning.  If the directory
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
from typing import Callable

from .. import knobs
from .entry_lock import EntryLock

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
LOCKS = ".locks"
#: Seconds a writer waits for a live process holding an entry's lock (XETILE_CACHE_LOCK_TIMEOUT).
DEFAULT_LOCK_TIMEOUT = knobs.CACHE_LOCK_TIMEOUT.default
#: Reads of an entry that a writer keeps replacing before the read counts as a miss.
READ_ATTEMPTS = 4
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


class CacheWarning(UserWarning):
    """Something was wrong with the disk cache; the cache carried on without it."""


def default_directory() -> Path:
    """``XETILE_CACHE_DIR`` or ``~/.cache/xetile_dsl/kernels``."""
    return knobs.CACHE_DIR.get() or Path.home() / ".cache" / "xetile_dsl" / "kernels"


def default_lock_timeout() -> float:
    """``XETILE_CACHE_LOCK_TIMEOUT`` (seconds) or :data:`DEFAULT_LOCK_TIMEOUT`."""
    return max(knobs.CACHE_LOCK_TIMEOUT.get(), 0.0)


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

    def __init__(self, directory: str | os.PathLike | None = None, lock_timeout: float | None = None):
        self.directory = Path(directory) if directory is not None else default_directory()
        self.lock_timeout = default_lock_timeout() if lock_timeout is None else lock_timeout
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

    def _lock(self, key: str) -> EntryLock:
        """The entry's lock (``with lock as held``), bounded by ``lock_timeout``."""
        locks = self.directory / LOCKS
        _ensure_directory(locks)
        return EntryLock(locks / f"{key}.lock", self.lock_timeout)

    def _warn_locked(self, key: str, lock: EntryLock, doing: str) -> None:
        holder = lock.holder or {}
        warnings.warn(f"xetile_dsl kernel cache: entry {key[:16]}… is locked by pid {holder.get('pid', '?')} "
                      f"on {holder.get('host', '?')} for more than {lock.timeout:g} s; {doing}",
                      CacheWarning, stacklevel=5)

    # --- the interface ---------------------------------------------------------------
    def get(self, key: str, check: Callable[[dict[str, bytes]], str | None] | None = None
            ) -> dict[str, bytes] | None:
        """The blobs stored under ``key``, or None (a miss).

        ``check(files)`` is asked about entries read from disk and returns why they cannot be
        trusted (or None); such an entry is a miss with a warning, and the caller's ``put``
        replaces it.  (Entries in memory were put or checked by this process.)"""
        _check_name("key", key)
        files = self.memory.get(key)
        if files is not None:
            self.stats.hits_memory += 1
            return dict(files)
        files = self._read(key) if self.readable else None
        problem = check(files) if files is not None and check is not None else None
        if problem is not None:
            self.stats.corrupt += 1
            warnings.warn(f"xetile_dsl kernel cache: entry {key[:16]}… in {self.directory} is invalid "
                          f"({_one_line(problem)}); the kernel will be rebuilt", CacheWarning, stacklevel=3)
            files = None
        if files is None:
            self.stats.misses += 1
            return None
        self.stats.hits_disk += 1
        self.memory[key] = files
        return dict(files)

    def discard(self, key: str, why: str) -> None:
        """Forget an entry the caller found unusable after reading it (e.g. a program binary
        the runtime refused): a warning, and it is removed from memory and disk."""
        _check_name("key", key)
        self.memory.pop(key, None)
        self._discard(key, why, _identity(self.directory / key))

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
                if self._write(key, files, meta or {}):
                    self.stats.writes += 1
            except OSError as exc:
                self._degrade(f"cannot write entry {key[:16]}… in {self.directory} ({exc})")

    # --- disk entries ----------------------------------------------------------------
    def _read(self, key: str) -> dict[str, bytes] | None:
        """The entry's files if they check out; None for no entry (or one being replaced on
        every attempt); a damaged entry that stays in place is discarded."""
        entry = self.directory / key
        for _ in range(READ_ATTEMPTS):
            try:
                files, problem, identity = _read_entry(entry, key)
            except (FileNotFoundError, NotADirectoryError):
                return None          # no entry, or a file in its place (the next put repairs it)
            except OSError as exc:
                self._discard(key, f"{type(exc).__name__}: {exc}", None)
                return None
            if problem is None:
                return files
            if identity is not None:     # the entry was still in place when the check failed
                self._discard(key, problem, identity)
                return None
        return None

    def _discard(self, key: str, why: str, identity: tuple | None) -> None:
        """Delete a damaged entry (with a warning) so the caller rebuilds it; only the very
        directory judged damaged (``identity``), never one a writer put there since."""
        self.stats.corrupt += 1
        warnings.warn(f"xetile_dsl kernel cache: entry {key[:16]}… in {self.directory} is damaged "
                      f"({_one_line(why)}); deleting it, the kernel will be rebuilt", CacheWarning, stacklevel=4)
        entry = self.directory / key
        try:
            with self._lock(key) as held:
                if held and (identity is None or _identity(entry) == identity):
                    self._remove_entry(entry)
        except OSError:
            pass

    def _write(self, key: str, files: dict[str, bytes], meta: dict) -> bool:
        """Write the entry atomically; False (with a warning) when a live process kept its
        lock past ``lock_timeout`` (the kernel stays in memory)."""
        manifest = {"version": FORMAT_VERSION, "key": key, "created": time.time(), "meta": meta,
                    "files": {n: _sha256(d) for n, d in sorted(files.items())}}
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=self.directory))
        try:
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
            lock = self._lock(key)
            with lock as held:
                if not held:
                    self._warn_locked(key, lock, "keeping this kernel in memory only")
                    return False
                self._remove_entry(self.directory / key)
                os.replace(tmp, self.directory / key)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return True

    def _remove_entry(self, entry: Path) -> None:
        """Remove whatever is at ``entry``: a directory is renamed aside first (readers that
        have it open fail over to the next entry), a file where a directory belongs is unlinked."""
        if entry.is_symlink() or (entry.exists() and not entry.is_dir()):
            entry.unlink(missing_ok=True)
            return
        aside = self.directory / f".old-{entry.name[:16]}-{os.urandom(6).hex()}"
        try:
            os.rename(entry, aside)
        except FileNotFoundError:
            return
        shutil.rmtree(aside, ignore_errors=True)

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
                self._remove_entry(entry)
                count += 1
        return count


_SHARED: KernelCache | None = None


def shared_cache() -> KernelCache:
    """The process's cache for the current XETILE_CACHE_DIR (a test or program that points
    the variable elsewhere gets a cache there); compiled kernels and built programs share it."""
    global _SHARED
    if _SHARED is None or _SHARED.directory != default_directory():
        _SHARED = KernelCache()
    return _SHARED


def _one_line(text: str) -> str:
    """The first line of ``text`` (warnings stay one line)."""
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def _identity(path: Path) -> tuple | None:
    """(device, inode) of ``path``, None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _ensure_directory(path: Path) -> None:
    """Make ``path`` a directory, removing a file that stands in its place."""
    try:
        path.mkdir(exist_ok=True)
    except FileExistsError:
        path.unlink(missing_ok=True)
        path.mkdir(exist_ok=True)


def _read_at(directory_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY, dir_fd=directory_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _read_entry(entry: Path, key: str) -> tuple[dict | None, str | None, tuple | None]:
    """(files, problem, identity) of one snapshot of ``entry``: every file is read relative
    to the directory opened once.  On a problem, ``identity`` is the directory's (device,
    inode) if it is still the one at ``entry`` (damage), else None (it was replaced while
    being read: read again).  Raises FileNotFoundError/NotADirectoryError for no entry."""
    fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            manifest = json.loads(_read_at(fd, MANIFEST))
            names = manifest["files"]
            for name in names:
                _check_name("file name", name)
            files = {name: _read_at(fd, name) for name in names}
            bad = [n for n, digest in names.items() if _sha256(files[n]) != digest]
            if manifest.get("version") != FORMAT_VERSION or manifest.get("key") != key or bad:
                raise ValueError(f"checksum mismatch in {bad}" if bad else "manifest does not match")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            st = os.fstat(fd)
            mine = (st.st_dev, st.st_ino)
            return None, f"{type(exc).__name__}: {exc}", (mine if _identity(entry) == mine else None)
        return files, None, None
    finally:
        os.close(fd)
