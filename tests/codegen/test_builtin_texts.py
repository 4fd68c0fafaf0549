"""Emulated builtins' LLVM IR texts kept per process (codegen/builtins/texts.py):
a later module reuses a body only under the key that built it (builder key, target,
emulation), never another body of the same name, and a module with reused bodies is
the module a fresh build gives, and computes the same.

The suite sets ``XETILE_VERIFY_IR=1``, under which every reuse is rebuilt and compared;
these tests turn it off so that reuse itself is what runs."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from llvmlite import ir

import xetile_dsl as xd
from xetile_dsl.codegen.builtins import texts as builtin_texts
from xetile_dsl.codegen.builtins.intel import IntelBuiltins
from xetile_dsl.errors import InternalCompilerError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.targets.target import PVC

I32 = ir.IntType(32)
SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


@pytest.fixture
def reuse(monkeypatch):
    """Reuse on, nothing kept yet, counters from zero."""
    monkeypatch.setenv("XETILE_VERIFY_IR", "0")
    monkeypatch.setattr(builtin_texts, "_KEPT", {})
    monkeypatch.setattr(builtin_texts, "stats", {"kept": 0, "reused": 0})


def _same_named_builtin(bi, value: int) -> ir.Function:
    """``i32 __test_builtin()`` returning ``value``: one name, a body per value."""
    fn = bi.define_internal("__test_builtin", ir.FunctionType(I32, []))
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    bi.lane_id(builder)          # the body calls a declared function too
    builder.ret(ir.Constant(I32, value))
    return fn


def _module_with(target, key: tuple, value: int) -> str:
    module = ir.Module("m")
    bi = IntelBuiltins(module, target, True)
    bi.build_once(key, lambda: _same_named_builtin(bi, value))
    return str(module)


def test_a_same_named_body_of_another_key_is_built_not_reused(reuse):
    first, other, again = (_module_with(PVC, ("test", v), v) for v in (1, 2, 1))
    assert "ret i32 1" in first and "ret i32 2" in other and "ret i32 1" not in other
    assert again == first          # the kept text, with the lane-id declaration it calls
    assert builtin_texts.stats == {"kept": 2, "reused": 1}


def test_the_target_is_part_of_the_key(reuse):
    """The same builder key on another target builds again (its facts may shape the body)."""
    variant = dataclasses.replace(PVC, name="pvc-variant")
    assert "ret i32 1" in _module_with(PVC, ("test",), 1)
    assert "ret i32 2" in _module_with(variant, ("test",), 2)
    assert builtin_texts.stats == {"kept": 2, "reused": 0}


def test_verify_mode_rebuilds_every_reuse_and_catches_a_short_key(reuse, monkeypatch):
    """XETILE_VERIFY_IR=1 (the suite) builds each reused body again and compares: a key
    missing a parameter of the body is a compiler error, not a wrong kernel."""
    monkeypatch.setenv("XETILE_VERIFY_IR", "1")
    _module_with(PVC, ("test",), 1)
    assert "ret i32 1" in _module_with(PVC, ("test",), 1)
    with pytest.raises(InternalCompilerError, match="key misses a parameter"):
        _module_with(PVC, ("test",), 2)


KERNELS = [("cpu", {"BM": 32, "BN": 32, "BK": 16}), ("cpu", {"BM": 16, "BN": 32, "BK": 32}),
           ("cpu-arc", {"BM": 32, "BN": 32, "BK": 16}), ("cpu-arc", {"BM": 16, "BN": 16, "BK": 32})]


def test_gemms_with_reused_bodies_are_the_fresh_modules_and_compute_the_same(reuse):
    fresh = {}
    for target, const in KERNELS:
        builtin_texts._KEPT.clear()
        fresh[target, str(const)] = xd.compile(matmul_kernel, SIG, const, target=target).asm["llvm"]
    for target, const in KERNELS:   # each other's bodies kept now
        kernel = xd.compile(matmul_kernel, SIG, const, target=target)
        assert kernel.asm["llvm"] == fresh[target, str(const)], (target, const)
    assert builtin_texts.stats["reused"] >= 4     # every DPAS and 2D block body at least
    rng = np.random.default_rng(7)
    a = rng.integers(-2, 3, (64, 96)).astype(np.float16)
    b = rng.integers(-2, 3, (96, 64)).astype(np.float16)
    for target, const in (KERNELS[1], KERNELS[3]):
        kernel = xd.compile(matmul_kernel, SIG, const, target=target)
        c = np.zeros((64, 64), np.float32)
        kernel.launch((64 // const["BM"], 64 // const["BN"]), [a, b, c, 96])
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))   # small integers: exact
