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

Named barriers (XeGPU ``init_nbarrier`` / ``nbarrier_arrive`` / ``nbarrier_wait``, which
``xetile-wg-to-sg`` generates for exchanges inside groups of subgroups) keep their own
semantics: barrier ``id`` completes when ``count`` subgroups have arrived at it, and
releases exactly those; the others keep waiting (or running).  So a named barrier that
is missing, or whose ids group the subgroups differently from the data they exchange,
lets a subgroup read SLM its partners have not written yet, as on the device.

A subgroup that returns while others wait at a barrier is a divergent barrier (a hang or
undefined behaviour on the device) and stops the run with an error at that barrier; so
does a state where every subgroup waits and no barrier can complete.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from .engine import located
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
        self._nb_waiting: dict[int, tuple[int, object]] = {}  # subgroup -> (named barrier id, wait op)
        self._nb_arrived: dict[int, list[int]] = {}  # named barrier id -> subgroups arrived this phase
        self._nb_count: dict[int, int] = {}  # named barrier id -> its participant count
        self._nb_passed: dict[tuple[int, int], int] = {}  # (subgroup, id) -> completed, not yet waited
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

    # ------------------------------------------------------------------ named barriers
    def nbarrier_arrive(self, sg: int, nb_id: int, count: int, op) -> None:
        """Subgroup ``sg`` signals named barrier ``nb_id`` (``count`` participants); the
        ``count``-th arrival completes the barrier for the subgroups that arrived."""
        with self._cond:
            if self._nb_count.setdefault(nb_id, count) != count:
                raise located(op, InterpreterError(
                    f"xegpu.nbarrier_arrive: named barrier {nb_id} was initialised with {self._nb_count[nb_id]} "
                    f"participants by another subgroup, with {count} by subgroup {sg}"))
            arrived = self._nb_arrived.setdefault(nb_id, [])
            if sg in arrived:
                raise located(op, InterpreterError(
                    f"xegpu.nbarrier_arrive: subgroup {sg} arrives twice at named barrier {nb_id} "
                    f"before it completes"))
            arrived.append(sg)
            if len(arrived) == count:
                self._complete(nb_id, self._nb_arrived.pop(nb_id))

    def _complete(self, nb_id: int, members: list[int]) -> None:
        for member in members:
            if self._nb_waiting.get(member, (None,))[0] == nb_id:
                del self._nb_waiting[member]  # runnable again
            else:
                key = (member, nb_id)
                self._nb_passed[key] = self._nb_passed.get(key, 0) + 1

    def nbarrier_wait(self, sg: int, nb_id: int, op) -> None:
        """Subgroup ``sg`` waits until named barrier ``nb_id`` completes for it."""
        if self.num_subgroups == 1:
            return
        with self._cond:
            key = (sg, nb_id)
            if self._nb_passed.get(key, 0):
                self._nb_passed[key] -= 1
                return
            if sg not in self._nb_arrived.get(nb_id, ()):
                raise located(op, InterpreterError(
                    f"xegpu.nbarrier_wait: subgroup {sg} waits at named barrier {nb_id} without an "
                    f"nbarrier_arrive before it"))
            self._nb_waiting[sg] = (nb_id, op)
            self._pass_turn()
        self._wait_for_turn(sg)

    def _pass_turn(self) -> None:
        """Give the turn to the lowest subgroup still running; when all wait at a barrier,
        release them.  Called with the condition held."""
        running = [s for s in range(self.num_subgroups)
                   if s not in self._waiting and s not in self._nb_waiting and s not in self._done]
        if running:
            self._turn = running[0]
        elif self._nb_waiting:
            self._error = self._stuck_error()
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

    def _stuck_error(self) -> InterpreterError:
        sg, (nb_id, op) = next(iter(sorted(self._nb_waiting.items(), key=lambda kv: kv[0])))
        arrived = self._nb_arrived.get(nb_id, [])
        return located(op, InterpreterError(
            f"xegpu.nbarrier_wait: named barrier {nb_id} needs {self._nb_count.get(nb_id)} participants but only "
            f"subgroup(s) {sorted(arrived)} arrived; subgroup(s) {sorted(self._nb_waiting)} wait at named barriers, "
            f"{sorted(self._waiting)} at gpu.barrier and {sorted(self._done)} returned: no barrier can complete"))
