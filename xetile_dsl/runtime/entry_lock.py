"""A lock file per kernel-cache entry that names its holder, with a bounded wait.

``<locks>/<key>.lock`` is created with ``O_CREAT | O_EXCL`` (atomic on local and network
filesystems) and holds ``{"pid", "host", "nonce", "time"}``.  A waiter reads it to decide:

* a holder on this host whose pid no longer exists is dead: the lock is stale and broken;
* a holder on another host cannot be asked, so its lock is stale once it is older than
  :data:`STALE_AFTER` (the cache holds a lock for the milliseconds of a rename);
* a live holder is waited for at most ``timeout`` seconds; then :meth:`EntryLock.acquire`
  returns False and the caller carries on without the lock (the cache keeps the kernel in
  memory) instead of waiting on a stuck process.

A lock that is unreadable or empty for longer than :data:`UNWRITTEN_GRACE` (its creator
died between creating and writing it) is stale too.  Breaking renames the lock aside and
checks that what it took is the stale lock it judged, so a fresh lock taken by another
waiter in between is put back.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

#: this host's name (``uname``'s node name, what ``socket.gethostname`` returns, without
#: importing socket: a warm first launch pays every import)
HOST = platform.node()
#: Seconds after which a lock held on another host is presumed abandoned.
STALE_AFTER = 600.0
#: Seconds a lock file may stay empty (its creator between open and write).
UNWRITTEN_GRACE = 2.0


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this host (signal 0 probes without sending)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # exists, owned by someone else
        return True
    return True


class EntryLock:
    """``with EntryLock(path, timeout) as held:`` — ``held`` is False when a live holder
    kept the lock for ``timeout`` seconds; ``holder`` then says who (pid, host)."""

    def __init__(self, path: Path, timeout: float, poll: float = 0.02):
        self.path, self.timeout, self.poll = Path(path), timeout, poll
        self.nonce: str | None = None
        self.holder: dict | None = None

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> bool:
        """Take the lock, breaking a stale one; False after ``timeout`` s of a live holder."""
        deadline = time.monotonic() + self.timeout
        while True:
            if self._create():
                return True
            raw = _read(self.path)
            if raw is None:                      # released (or broken) meanwhile: try again
                continue
            if _stale(raw, self.path):
                _break(self.path, raw)
                continue
            if time.monotonic() >= deadline:
                self.holder = _parse(raw) or {}
                return False
            time.sleep(self.poll)

    def release(self) -> None:
        """Remove the lock if it is still ours (a waiter may have judged it stale)."""
        raw = _read(self.path) if self.nonce else None
        if raw is not None and (_parse(raw) or {}).get("nonce") == self.nonce:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
        self.nonce = None

    def _create(self) -> bool:
        nonce = os.urandom(16).hex()
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps({"pid": os.getpid(), "host": HOST, "nonce": nonce, "time": time.time()}))
        except OSError:                          # e.g. a full disk: leave no empty lock behind
            self.path.unlink(missing_ok=True)
            raise
        self.nonce = nonce
        return True


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _parse(raw: bytes) -> dict | None:
    try:
        owner = json.loads(raw)
    except ValueError:
        return None
    return owner if isinstance(owner, dict) else None


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _stale(raw: bytes, path: Path) -> bool:
    """Whether the lock whose content is ``raw`` was left by a dead holder."""
    owner = _parse(raw)
    if owner is None or not isinstance(owner.get("pid"), int):
        return _age(path) > UNWRITTEN_GRACE
    if owner.get("host") == HOST:
        return not pid_alive(owner["pid"])
    return _age(path) > STALE_AFTER


def _break(path: Path, raw: bytes) -> None:
    """Remove the stale lock ``raw``; put back a lock that is not it (taken meanwhile)."""
    grave = path.with_name(f"{path.name}.broken-{os.urandom(16).hex()}")
    try:
        os.rename(path, grave)
    except FileNotFoundError:
        return
    try:
        if _read(grave) != raw:
            os.link(grave, path)
    except OSError:
        pass                                     # someone holds a newer lock already
    finally:
        grave.unlink(missing_ok=True)
