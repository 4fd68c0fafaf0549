"""Asynchronous launches that may still run, and :func:`synchronize`, which waits for them.

A device-array launch returns without waiting; the arrays it uses stay alive here until
the kernel is done (loaded_kernel.py and replay.py record each launch with :func:`track`).
"""
from __future__ import annotations

import itertools
import threading

from .arrays import same_queue

#: id(queue) -> (backend, queue, {key: (event, kept arrays)}, the queue orders its
#: launches): launches that may still run.
INFLIGHT: dict[int, tuple] = {}
INFLIGHT_LOCK = threading.Lock()   # launches of several threads record and prune here
LAUNCH_IDS = itertools.count(1)    # PreparedLaunch.track_id (next() is atomic under the GIL)
PRUNE_AT = 256


def track(backend, queue, event, keep, launch_id: int) -> None:
    """Remember an asynchronous launch (``keep`` stays alive until it is done).

    When the queue orders its launches (each ends after the one before: dpctl's order
    manager, an in-order OpenCL queue), a later launch ending implies the earlier ones
    ended, so only the newest event of each prepared launch is remembered: repeated
    launches cost one dictionary store, and the table stays small."""
    with INFLIGHT_LOCK:
        entry = INFLIGHT.get(id(queue))
        if entry is None:
            entry = INFLIGHT[id(queue)] = (backend, queue, {}, backend.orders(queue))
        pending = entry[2]
        pending[launch_id if entry[3] else id(event)] = (event, keep)
        if len(pending) >= PRUNE_AT:
            done = [k for k, (ev, _) in pending.items() if backend.done(ev)]
            for k in done:
                del pending[k]


def synchronize(queue=None) -> None:
    """Wait for every asynchronous launch (or those on ``queue``) to finish."""
    with INFLIGHT_LOCK:
        entries = [(key, entry[1]) for key, entry in INFLIGHT.items() if queue is None or same_queue(entry[1], queue)]
    for key, q in entries:
        (q.wait() if hasattr(q, "wait") else q.finish())
        with INFLIGHT_LOCK:
            entry = INFLIGHT.get(key)
            if entry is not None:   # keep launches another thread made after the wait
                backend, pending = entry[0], entry[2]
                for k in [k for k, (ev, _) in pending.items() if backend.done(ev)]:
                    del pending[k]
                if not pending:
                    del INFLIGHT[key]
