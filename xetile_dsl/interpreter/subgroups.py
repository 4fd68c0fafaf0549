"""Per-subgroup execution: the subgroups of one workgroup as cooperatively scheduled
programs that share global memory and the workgroup's shared local memory (SLM).

Each subgroup runs the subgroup-level kernel (the IR after ``xetile-wg-to-sg``) in its
own thread, but only one thread runs at a time: the workgroup hands a *turn* from
subgroup to subgroup.  Subgroup 0 runs until its first ``gpu.barrier`` (or its end),
then subgroup 1, ..., then, once every subgroup waits at the barrier, all of them are
released and the next phase starts again with the lowest subgroup id.  The schedule is
therefore deterministic: between two barriers the subgroups run one after another in
id order, and a barrier is the only point where one subgroup's writes become visible to
a subgroup with a lower id — exactly the guarantee a GPU gives, so a kernel that is
missing a barrier reads stale SLM here too.

A subgroup that returns while others wait at a barrier is a divergent barrier (a hang or
undefined behaviour on the device) and stops the run with an error at that barrier.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from .core import located
from .values import InterpreterError


class _Aborted(BaseException):
    """Raised in the waiting subgroups when another subgroup failed."""


class Workgroup:
    """The scheduler and the shared state (SLM allocations) of one workgroup."""

    def __init__(self, num_subgroups: int):
        self.num_subgroups = num_subgroups
        #: SLM: one allocation per memref.alloc op in memory space 3, shared by all subgroups
        self.slm: dict[int, object] = {}
        self._cond = threading.Condition()
        self._turn = 0
        self._waiting: dict[int, object] = {}   # subgroup -> the gpu.barrier op it waits at
        self._done: set[int] = set()
        self._error: BaseException | None = None

    # ------------------------------------------------------------------ running
    def run(self, body: Callable[[int], None]) -> None:
        """Run ``body(subgroup_id)`` for every subgroup; re-raises the first error."""
        if self.num_subgroups == 1:
            body(0)
            return
        threads = [threading.Thread(target=self._main, args=(sg, body), daemon=True,
                                    name=f"xetile-subgroup-{sg}") for sg in range(self.num_subgroups)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._error is not None:
            raise self._error

    def _main(self, sg: int, body: Callable[[int], None]) -> None:
        try:
            self._wait_for_turn(sg)
            body(sg)
        except _Aborted:
            return
        except BaseException as exc:  # noqa: BLE001 - handed to the launching thread
            with self._cond:
                self._error = self._error or exc
                self._cond.notify_all()
            return
        with self._cond:
            self._done.add(sg)
            self._pass_turn()

    def _wait_for_turn(self, sg: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._turn == sg or self._error is not None)
            if self._error is not None:
                raise _Aborted

    # ------------------------------------------------------------------ barriers
    def barrier(self, sg: int, op) -> None:
        """Subgroup ``sg`` reached the ``gpu.barrier`` ``op``: wait until every subgroup has."""
        if self.num_subgroups == 1:
            return
        with self._cond:
            self._waiting[sg] = op
            self._pass_turn()
        self._wait_for_turn(sg)

    def _pass_turn(self) -> None:
        """Give the turn to the lowest subgroup still running; when all wait at a barrier,
        release them.  Called with the condition held."""
        running = [s for s in range(self.num_subgroups) if s not in self._waiting and s not in self._done]
        if running:
            self._turn = running[0]
        elif self._waiting and self._done:
            self._error = self._divergence_error()
        elif self._waiting:
            self._turn = min(self._waiting)
            self._waiting.clear()
        else:
            self._turn = -1
        self._cond.notify_all()

    def _divergence_error(self) -> InterpreterError:
        op = next(iter(self._waiting.values()))
        return located(op, InterpreterError(
            f"gpu.barrier: subgroup(s) {sorted(self._waiting)} wait at this barrier but subgroup(s) "
            f"{sorted(self._done)} of the workgroup returned without reaching it; every subgroup of a "
            "workgroup must execute the same barriers (a divergent barrier hangs on the device)"))
