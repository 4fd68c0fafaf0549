"""Launches on a dpctl queue in program order with the work dpnp submits there, cheaply.

dpnp's queues are out of order: dpnp orders its own work through dpctl's per-queue order
manager (``dpctl.utils.SequentialOrderManager[queue]``), whose state (a C++
``_OrderManager``) holds the events of the work submitted so far; each dpnp call waits
for them and adds its own.  A launch must do the same, and reading those events back
from C++ (one new ``SyclEvent`` per event) and replacing them after every launch costs
about as much as the submit itself.

So the first launch on a queue (while the process has one thread) installs a
``LaunchOrder`` as the manager's state: an ``_OrderManager`` that also holds our newest
launch's event in Python (``after``) and counts the events anyone else adds
(``changes``).  A launch then waits for ``after`` alone while nobody else added work
since the launch before (that launch waited for all the C++ events, so ``after`` ends
after them): no event is read back from C++ and nothing is replaced.  Once someone did,
the launch waits for every event and (one thread) a fresh state holding it alone
replaces the old one, as the first launch's did.  Reading the state (dpnp's
``submitted_events``, ``num_submitted_events``, ``wait()``) sees ``after`` too, so
dpnp's next call waits for our launch.

Threads: our launches on one state take its lock from reading ``after`` to replacing it
(no launch's event is lost); an event another thread adds is counted after it is in the
C++ state, so a launch that read the events before it sees the count changed and the
next launch waits for it.  States are replaced only while the process has one thread
(an event added to the old state between reading it and the swap would be lost); with
several threads the first launch adds its event to the manager's own state, and a
launch after others' work marks the LaunchOrder as read instead of replacing it.

Known limit: copying a manager (``copy.copy``: the C++ copy constructor) copies the C++
events only; nothing in dpctl or dpnp does.
"""
from __future__ import annotations

import threading

_CLASSES: dict = {}


def launch_order_class(base, event_type):
    """The LaunchOrder subclass of dpctl's ``_OrderManager`` ``base`` (its events of type
    ``event_type``), made once: dpctl is optional, its classes exist once it is imported."""
    cls = _CLASSES.get((base, event_type))
    if cls is None:
        cls = _CLASSES[base, event_type] = _launch_order(base, event_type)
    return cls


def _launch_order(base, event_type):
    class LaunchOrder(base):
        """The state of a dpctl order manager that our launches go through (see the
        module's doc): dpctl's ``_OrderManager`` plus ``after`` (the newest launch's
        event), ``changes``/``seen`` (whether anyone else added an event since that launch
        read them all) and ``lock`` (launches from several threads)."""

        def __init__(self, capacity: int = 16) -> None:
            super().__init__(capacity)
            self.after = []          # the newest launch's event: later work waits for it
            self.changes = 0         # events added by anyone else, counted after each add
            self.seen = 0            # ``changes`` when the newest launch read every event
            self.lock = threading.Lock()

        # reads see our newest launch too
        def get_submitted_events(self):
            return super().get_submitted_events() + self.after

        def get_num_submitted_events(self):
            return super().get_num_submitted_events() + len(self.after)

        def wait(self):
            super().wait()
            event_type.wait_for(self.after)

        # every event someone else adds is counted once it is in the state
        def add_to_both_events(self, host_event, event):
            super().add_to_both_events(host_event, event)
            self.changes += 1

        def add_vector_to_both_events(self, host_events, events):
            super().add_vector_to_both_events(host_events, events)
            self.changes += 1

        def add_to_submitted_events(self, event):
            super().add_to_submitted_events(event)
            self.changes += 1

    return LaunchOrder


def manager_lookup(order):
    """``queue -> order[queue]`` for dpctl's ``SequentialOrderManager`` ``order``, reading its
    per-context dictionary directly where it has one (its ``__getitem__`` checks the
    queue's type and looks it up twice); a queue without a manager yet gets one from
    ``order[queue]``."""
    managers = managers_of(order)
    if managers is None:
        return order.__getitem__

    def lookup(queue):
        manager = managers.get().get(queue)
        return manager if manager is not None else order[queue]

    return lookup


def managers_of(order):
    """dpctl's per-context dictionary of ``order``'s managers (a ContextVar whose value maps
    queue -> manager), or None when this dpctl keeps them otherwise."""
    managers = getattr(order, "_map", None)
    return managers if hasattr(managers, "get") else None


def submit(queue, manager, state, kernel, args, gsize, lsize):
    """Enqueue ``kernel`` on ``queue`` after all work before it and make it the work later
    calls wait for; ``state`` is ``manager._state``, a LaunchOrder.  Returns the event.

    After someone else added work the launch waits for every event; then, while the
    process has one thread, a fresh state holding the launch alone replaces the old one
    (so dpnp's next call waits for one event, not for the ones the launch already
    followed); with several threads the old state stays, marked as read."""
    with state.lock:
        if state.changes == state.seen:
            event = queue.submit_async(kernel, args, gsize, lsize, state.after)
        else:
            seen = state.changes
            event = queue.submit_async(kernel, args, gsize, lsize, state.get_submitted_events())
            if threading.active_count() == 1:
                _install(manager, state.__class__, state, event)
                return event
            state.seen = seen
        state.after = [event]
    return event


def waits(manager, order_class) -> list:
    """The events a launch on ``manager``'s queue waits for: our newest launch's alone
    when nobody else added work since it read them all, else every event."""
    state = manager._state
    if state.__class__ is order_class and state.changes == state.seen:
        return state.after
    return manager.submitted_events


def submit_first(queue, manager, order_class, kernel, args, gsize, lsize):
    """Enqueue after every event of ``manager`` (whose state is not a LaunchOrder yet):
    then, while the process has one thread, install a LaunchOrder holding the new event;
    with several threads add the event to the manager's state.  Returns the event."""
    event = queue.submit_async(kernel, args, gsize, lsize, manager.submitted_events)
    if order_class is None or threading.active_count() > 1:
        manager.add_event_pair(event, event)
    else:
        _install(manager, order_class, manager._state, event)
    return event


def _install(manager, order_class, old, event) -> None:
    """Make a new LaunchOrder holding ``event`` (which waited for every submitted event of
    ``old``) the state of ``manager``; host-task events (which keep dpnp's temporaries
    alive) are carried over.  Only while the process has one thread: an event another
    thread added to ``old`` meanwhile would be lost."""
    state = order_class(16)
    if old.get_num_host_task_events():
        for host in old.get_host_task_events():
            state.add_to_host_task_events(host)
    state.after = [event]
    manager._state = state
