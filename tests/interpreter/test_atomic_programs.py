"""The interpreter runs the programs of a kernel with atomics as interleaved, cooperatively
scheduled threads: a program can wait for a later one, a spin that no program can end is
an error at the spinning atomic (the device would hang), and element atomics follow numpy."""
from __future__ import annotations

import numpy as np
import pytest

from kernels.atomics import handoff_kernel, never_released_kernel, ticket_kernel
from xetile_dsl.interpreter import programs
from xetile_dsl.interpreter.values import InterpreterError


@pytest.mark.parametrize("grid", [2, 5, 40])
def test_a_program_waits_for_a_later_one(grid):
    """Program 0 spins until the last program raises the flag (more programs than are live
    at once with 40: the last starts only once earlier ones returned)."""
    flag, out = np.zeros((1, 1), np.int32), np.zeros((1, 1), np.int32)
    handoff_kernel.on("interpret")[(grid,)](flag, out)
    assert flag[0, 0] == 7 and out[0, 0] == 1


def test_a_lock_never_released_is_an_error_at_the_spin():
    lock = np.zeros((1, 1), np.int32)
    with pytest.raises(InterpreterError) as info:
        never_released_kernel.on("interpret")[(3,)](lock)
    text = str(info.value)
    assert "atomics.py:" in text and f"{programs.SPIN_LIMIT} atomics in a row" in text, text
    assert "a lock never released hangs on the device" in text


def test_programs_interleave_at_atomics():
    """Tickets drawn by 20 programs: each program draws once, so the counter ends at 20 and
    the tickets are 0..19 (the schedule passes the turn after every atomic)."""
    counter, tickets = np.zeros((1, 1), np.int32), np.full((1, 20), -1, np.int32)
    ticket_kernel.on("interpret")[(20,)](counter, tickets)
    assert counter[0, 0] == 20
    np.testing.assert_array_equal(np.sort(tickets[0]), np.arange(20))
