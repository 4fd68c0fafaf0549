"""Fixtures of the NVIDIA backend's tests."""
from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def nv_coverage():
    """scripts/nv_coverage.py loaded, every launch (numpy arrays, torch CPU tensors) routed
    to a compile for sm90 while the module's tests run; restored afterwards."""
    spec = importlib.util.spec_from_file_location("nv_coverage", os.path.join(ROOT, "scripts", "nv_coverage.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    saved = mod.snapshot()
    mod.install("sm90")
    yield mod
    mod.restore(saved)


@pytest.fixture(scope="module")
def check():
    """benchmarks/nv_ops_check.py (the GPU checks: torch), loaded for its kernels, which the
    static tests compile for sm90."""
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("nv_ops_check_kernels", os.path.join(ROOT, "benchmarks",
                                                                                         "nv_ops_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
