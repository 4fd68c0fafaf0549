"""A compile runs with Python's cyclic garbage collector paused (compiler.collector_paused,
its collections were 25-50 ms of a GEMM compile) and leaves it as it found it."""
from __future__ import annotations

import gc
import threading

import pytest

import xetile_dsl as xd
from xetile_dsl import compiler
from xetile_dsl.kernels.matmul import matmul_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


@pytest.fixture
def seen(monkeypatch):
    """gc.isenabled() as each compile's stages saw it."""
    states = []
    inner = compiler._compile_kernel
    monkeypatch.setattr(compiler, "_compile_kernel", lambda *a: states.append(gc.isenabled()) or inner(*a))
    return states


@pytest.mark.parametrize("enabled", [True, False])
def test_compile_pauses_the_collector_and_restores_it(seen, enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        xd.compile(matmul_kernel, SIG, {"BM": 16, "BN": 16, "BK": 16}, target="interpret")
        assert seen == [False] and gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_concurrent_pauses_resume_once_the_last_ends():
    first_in, release = threading.Event(), threading.Event()

    def hold():
        with compiler.collector_paused():
            first_in.set()
            release.wait(10)
    assert gc.isenabled()
    worker = threading.Thread(target=hold)
    worker.start()
    first_in.wait(10)
    with compiler.collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()          # the other pause still holds
    release.set()
    worker.join()
    assert gc.isenabled()
