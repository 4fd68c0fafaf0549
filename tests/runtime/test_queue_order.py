"""runtime/queue_order.py: launches on a dpctl queue wait for exactly what they must.

A launch waits for the previous launch alone while nobody else added work to the queue's
order manager, for every event once someone did, and whatever reads the manager (dpnp's
next call, ``wait()``) sees the newest launch.  The queue here records the events each
submit is told to wait for; the manager and its state are dpctl's own."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import xetile_dsl as xd
from conftest_tools import require_dpnp, require_module
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.runtime import queue_order
from xetile_dsl.runtime.opencl_icd import setup_intel_cpu_icd

setup_intel_cpu_icd()
dpctl = require_module("dpctl")
seq_order = require_module("dpctl.utils._seq_order_keeper")
SequentialOrderManager = require_module("dpctl.utils").SequentialOrderManager


class RecordingQueue:
    """Stands for a SyclQueue: each submit records what it waits for and returns a new event."""

    def __init__(self):
        self.waited = []

    def submit_async(self, kernel, args, gsize, lsize, waits=None):
        self.waited.append(waits)
        return dpctl.SyclEvent()


@pytest.fixture()
def manager():
    """The order manager of a new queue (dpctl keeps one per queue)."""
    return SequentialOrderManager[dpctl.SyclQueue("opencl:cpu")]


def _order_class():
    return queue_order.launch_order_class(seq_order._OrderManager, dpctl.SyclEvent)


def _launch(queue, manager):
    state = manager._state
    if state.__class__ is _order_class():
        return queue_order.submit(queue, manager, state, None, [], [1], [1])
    return queue_order.submit_first(queue, manager, _order_class(), None, [], [1], [1])


def test_repeated_launches_wait_for_the_previous_launch_alone(manager):
    assert threading.active_count() == 1
    queue = RecordingQueue()
    first = _launch(queue, manager)
    assert queue.waited[0] == []                        # a new queue: nothing to wait for
    assert manager._state.__class__ is _order_class()   # installed by the first launch
    second = _launch(queue, manager)
    third = _launch(queue, manager)
    assert [[e is first for e in queue.waited[1]], [e is second for e in queue.waited[2]]] == [[True], [True]]
    assert manager.submitted_events == [third] and manager.num_submitted_events == 1


def test_an_event_added_by_dpnp_makes_the_next_launch_wait_for_every_event(manager):
    queue = RecordingQueue()
    first = _launch(queue, manager)
    state = manager._state
    reads = []
    state.get_submitted_events = lambda: reads.append(1) or [first]   # what the launch reads
    manager.add_event_pair(dpctl.SyclEvent(), dpctl.SyclEvent())       # as every dpnp call does
    second = _launch(queue, manager)
    assert reads == [1]                                  # every event, read once
    assert manager._state is not state                   # then a state holding the launch alone
    assert manager.num_submitted_events == 1 and manager.submitted_events[0] is second
    _launch(queue, manager)
    assert reads == [1] and [e is second for e in queue.waited[2]] == [True]   # the previous launch alone


def test_with_another_thread_a_launch_after_dpnp_work_keeps_the_state(manager):
    queue = RecordingQueue()
    _launch(queue, manager)
    state = manager._state
    manager.add_event_pair(dpctl.SyclEvent(), dpctl.SyclEvent())
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        second = _launch(queue, manager)
        third = _launch(queue, manager)
    finally:
        release.set()
        other.join()
    assert manager._state is state                       # not swapped while another thread runs
    assert [e is second for e in queue.waited[2]] == [True]   # read once, then the previous launch alone
    assert manager.submitted_events[-1] is third


def test_wait_waits_for_the_newest_launch():
    waited = []

    class Events:
        wait_for = staticmethod(lambda events: waited.append(list(events)))

    state = queue_order.launch_order_class(seq_order._OrderManager, Events)(16)
    event = dpctl.SyclEvent()
    state.after = [event]
    state.wait()
    assert len(waited) == 1 and [e is event for e in waited[0]] == [True]


def test_with_several_threads_the_managers_state_is_kept(manager):
    """Swapping the state could drop an event another thread adds meanwhile: with a second
    thread alive the launch's event is added to the manager's own state instead."""
    queue, old = RecordingQueue(), manager._state
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        _launch(queue, manager)
        _launch(queue, manager)
    finally:
        release.set()
        other.join()
    assert manager._state is old
    assert len(queue.waited) == 2


def test_dpnp_work_between_launches_is_ordered_both_ways():
    """Real queue: a dpnp write before each launch, repeated launches, a dpnp read after
    each -- no waits in between; the read sees every kernel, every kernel the write."""
    dpnp = require_dpnp()
    queue = dpctl.SyclQueue("opencl:cpu")
    rng = np.random.default_rng(3)
    b = rng.integers(-2, 3, (32, 32)).astype(np.float16)
    da = dpnp.zeros((32, 32), dtype=np.float16, sycl_queue=queue)
    db = dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((32, 32), dtype=np.float32, sycl_queue=queue)
    seen = []
    for i in range(12):
        da.fill(float(i % 3 - 1))
        for k in (32, 16, 32):                  # the memo's same-argument and new-scalar paths
            matmul_kernel[(1, 1)](da, db, dc, k, BM=32, BN=32, BK=16)
        seen.append(dpnp.asnumpy(dc))
    xd.synchronize()
    for i, got in enumerate(seen):
        a = np.full((32, 32), i % 3 - 1, np.float32)
        np.testing.assert_array_equal(got, a @ b.astype(np.float32))


def test_manager_lookup_finds_dpctls_own_manager_for_new_and_known_queues():
    lookup = queue_order.manager_lookup(SequentialOrderManager)
    fresh = dpctl.SyclQueue("opencl:cpu")
    first = lookup(fresh)                                # none yet: made by dpctl
    assert first is SequentialOrderManager[fresh] and lookup(fresh) is first
    equal = dpctl.SyclQueue(fresh.sycl_context, fresh.sycl_device)   # another queue
    assert lookup(equal) is SequentialOrderManager[equal]


@pytest.mark.parametrize("thread_alive", [False, True], ids=["joined", "alive"])
def test_dpnp_work_another_thread_did_before_a_launch_is_waited_for(thread_alive):
    """Another thread's dpnp write to a kernel's input, submitted behind a backlog of
    launches (so still pending) before this thread launches again (it joins that thread),
    is seen by that launch: the order manager counted it.  With the thread still alive
    the state is kept (marked read), else replaced."""
    dpnp = require_dpnp()
    queue = dpctl.SyclQueue("opencl:cpu")
    b = np.random.default_rng(4).integers(-2, 3, (32, 32)).astype(np.float16)
    da = dpnp.zeros((32, 32), dtype=np.float16, sycl_queue=queue)
    db = dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((32, 32), dtype=np.float32, sycl_queue=queue)
    matmul_kernel[(1, 1)](da, db, dc, 32, BM=32, BN=32, BK=16)
    xd.synchronize()
    seen = []
    for i in range(8):
        for _ in range(20):                        # a backlog the write has to wait for
            matmul_kernel[(1, 1)](da, db, dc, 32, BM=32, BN=32, BK=16)
        written, release = threading.Event(), threading.Event()

        def write(value=float(i % 3 - 1)):
            da.fill(value)
            written.set()
            release.wait()

        other = threading.Thread(target=write)
        other.start()
        written.wait()                             # submitted (not run) before the next launch
        if not thread_alive:
            release.set()
            other.join()
        matmul_kernel[(1, 1)](da, db, dc, 32, BM=32, BN=32, BK=16)
        release.set()
        other.join()
        seen.append(dpnp.asnumpy(dc))
    for i, got in enumerate(seen):
        np.testing.assert_array_equal(got, np.full((32, 32), i % 3 - 1, np.float32) @ b.astype(np.float32))
