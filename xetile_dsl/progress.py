"""One line on stderr for work that runs long: a compile or a program build that has run
``PROGRESS_AFTER`` seconds prints what it is and where it is (kernel, target, stage), so
that a first launch taking a minute is not silent.  ``XETILE_PROGRESS=0`` turns it off.

The line comes from a timer thread, at most once per piece of work; work that ends
sooner prints nothing (and costs one timer thread started, cancelled and joined, so that none outlives the
work).
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable

from . import knobs

#: seconds a compile or a program build runs before it prints its progress line
PROGRESS_AFTER = 2.0


@contextmanager
def reported(what: str, stage: Callable[[], str]):
    """Run the ``with`` body; if it is still running after :data:`PROGRESS_AFTER` seconds,
    print ``xetile_dsl: <what>: <stage()>, N s so far`` to stderr (once)."""
    if not knobs.PROGRESS.get():
        yield
        return
    start = time.monotonic()

    def say() -> None:
        try:
            where = stage()
        except Exception:  # noqa: BLE001 - a progress line must never break the work
            where = "running"
        print(f"xetile_dsl: {what}: {where}, {time.monotonic() - start:.0f} s so far "
              f"({knobs.PROGRESS.name}=0: no such lines)", file=sys.stderr, flush=True)

    timer = threading.Timer(PROGRESS_AFTER, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        # wait for the timer thread to end: a launch takes dpctl's C submit only while the
        # process runs one thread (runtime/dpctl_submit.py), so none may linger
        timer.join()
