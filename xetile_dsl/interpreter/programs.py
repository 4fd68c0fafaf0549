"""Programs of one launch that use atomics, run as cooperatively scheduled threads.

Without atomics the programs of a launch run one after another (:mod:`.launch`); a
kernel whose programs talk through atomics (a spin lock, a counter, a flag) needs them to
interleave.  Each program then runs in its own thread, but only one runs at a time: the
*turn* passes to the next live program (in program order, round robin) at every atomic
and fence, so the interleaving is deterministic and a program waiting on a lock that
another program holds sees it released once the holder's next atomics have run.

At most :data:`RESIDENT` programs are live at once (a GPU keeps a bounded number of
workgroups resident too); the next one starts when a live one returns.  Programs that
keep executing atomics without any of them changing memory (:data:`SPIN_LIMIT` in a row)
are stuck: a lock that no live program will release hangs on the device, so the launch
stops with an error at the atomic that spins.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from .values import InterpreterError

#: programs live at once
RESIDENT = 16
#: atomics in a row, over all programs, that change no memory before the launch is stuck
SPIN_LIMIT = 20000


class _Aborted(BaseException):
    """Raised in the waiting programs when another program failed."""


class Programs:
    """The scheduler of one launch's programs (``run``) and the hook atomics call (``atomic``)."""

    def __init__(self, resident: int = RESIDENT):
        self.resident = resident
        self._cond = threading.Condition()
        self._live: list[int] = []
        self._turn = -1
        self._idle = 0
        self._error: BaseException | None = None
        self._local = threading.local()

    def run(self, program_ids: Sequence, body: Callable[[object], None]) -> None:
        """Run ``body(program_id)`` for every program; re-raises the first error."""
        pending = list(enumerate(program_ids))
        threads: list[threading.Thread] = []
        with self._cond:
            while pending or self._live:
                while pending and len(self._live) < self.resident and self._error is None:
                    n, pid = pending.pop(0)
                    self._live.append(n)
                    t = threading.Thread(target=self._main, args=(n, pid, body), daemon=True,
                                         name=f"xetile-program-{n}")
                    threads.append(t)
                    t.start()
                if self._turn not in self._live and self._live:
                    self._turn = self._live[0]
                    self._cond.notify_all()
                if self._error is not None and not self._live:
                    break
                self._cond.wait()
        for t in threads:
            t.join()
        if self._error is not None:
            raise self._error

    def _main(self, n: int, pid, body) -> None:
        self._local.n = n
        try:
            self._wait_for_turn(n)
            body(pid)
        except _Aborted:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the launching thread
            with self._cond:
                self._error = self._error or exc
        with self._cond:
            self._live.remove(n)
            self._turn = self._next_after(n)
            self._cond.notify_all()

    def _next_after(self, n: int) -> int:
        later = [m for m in self._live if m > n]
        return later[0] if later else (self._live[0] if self._live else -1)

    def _wait_for_turn(self, n: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._turn == n or self._error is not None)
            if self._error is not None:
                raise _Aborted

    def atomic(self, changed: bool, where: str) -> None:
        """The current program did an atomic (``changed``: it wrote memory); pass the turn."""
        n = self._local.n
        with self._cond:
            self._idle = 0 if changed else self._idle + 1
            if self._idle > SPIN_LIMIT:
                raise InterpreterError(
                    f"{where}: {SPIN_LIMIT} atomics in a row by programs {sorted(self._live)} changed no memory; "
                    "they wait for something no live program will do (a lock never released hangs on the device)")
            self._turn = self._next_after(n)
            self._cond.notify_all()
        self._wait_for_turn(n)


def uses_atomics(fn, atomic_ops: tuple) -> bool:
    """True when the kernel executes an atomic or a fence (its programs must interleave)."""
    return any(isinstance(op, atomic_ops) for op in fn.walk())


def pass_turn(run, op, changed: bool) -> None:
    """After an atomic or fence of ``run``'s program: pass the turn (when its launch
    interleaves programs)."""
    programs = getattr(run.launch, "programs", None)
    if programs is not None:
        programs.atomic(changed, op.name)
