"""Codegen of the atomics: each order and scope is the SPIR-V builtin call with the
constant scope and memory semantics LLVM's SPIR-V backend keeps (storage-class bit
included); an f32 add is OpAtomicFAddEXT only on a target whose ``atomic_float_add``
lists f32, a compare-exchange loop elsewhere and for f16."""
from __future__ import annotations

from dataclasses import replace

import pytest

import xetile_dsl as xd
from kernels.atomics import element_rmw_kernel, spin_lock_kernel, tile_cas_kernel
from xetile_dsl.targets import PVC, register_target

SIG = {"lock": "i32[:,:]", "total": "f32[:,:]"}


@pytest.mark.parametrize("acq,scope,call", [
    ("acquire", "device", ", i32 1, i32 514, i32 514, i32 1, i32 0)"),
    ("acq_rel", "workgroup", ", i32 2, i32 520, i32 514, i32 1, i32 0)"),
    ("relaxed", "device", ", i32 1, i32 0, i32 0, i32 1, i32 0)"),
])
def test_compare_exchange_operands(acq, scope, call):
    """(pointer, scope, semantics if equal, if unequal (no release part), value, comparator);
    514 = CrossWorkgroupMemory | Acquire, 520 = ... | AcquireRelease."""
    llvm = xd.compile(spin_lock_kernel, SIG, {"SEM_ACQ": acq, "SEM_REL": "release", "SCOPE": scope},
                      target="pvc").asm["llvm"]
    line = next(s for s in llvm.splitlines() if "call" in s and "__spirv_AtomicCompareExchange" in s)
    assert line.endswith(call), line


@pytest.mark.parametrize("sem,scope,orders", [("release", "workgroup", "i32 2, i32 516, i32 0"),
                                              ("acq_rel", "device", "i32 1, i32 520, i32 514")])
def test_tile_compare_exchange_is_one_call_per_lane(sem, scope, orders):
    """The tile form: every lane's element is one i64 OpAtomicCompareExchange with the asked
    scope and semantics (unequal: no release part); two [4, 16] tiles, one call per row of
    16 lanes in the SIMT kernel: 8 calls."""
    sig = {name: "i64[:,:]" for name in ("x", "cmp", "val", "old", "claim", "seen")}
    llvm = xd.compile(tile_cas_kernel, sig, {"SEM": sem, "SCOPE": scope}, target="pvc").asm["llvm"]
    calls = [s for s in llvm.splitlines() if "call" in s and "__spirv_AtomicCompareExchange" in s]
    assert len(calls) == 8, calls
    assert all(f", {orders}, i64 " in c for c in calls), calls


@pytest.mark.parametrize("dtype,fadd", [("f32", True), ("f16", False)])
def test_float_add_follows_the_target_fact(dtype, fadd):
    sig = {"x": f"{dtype}[:,:]", "vals": f"{dtype}[:,:]", "old": f"{dtype}[:,:]"}
    llvm = xd.compile(element_rmw_kernel, sig, {"KIND": "add"}, target="pvc").asm["llvm"]
    assert ("__spirv_AtomicFAddEXT" in llvm) == fadd
    assert ("__spirv_AtomicCompareExchange" in llvm) != fadd


def test_a_target_without_f32_atomic_add_gets_the_loop():
    with register_target(replace(PVC, name="pvc-no-fadd", atomic_float_add=(), cpu_flavour=False)):
        sig = {"x": "f32[:,:]", "vals": "f32[:,:]", "old": "f32[:,:]"}
        llvm = xd.compile(element_rmw_kernel, sig, {"KIND": "add"}, target="pvc-no-fadd").asm["llvm"]
    assert "__spirv_AtomicFAddEXT" not in llvm and "__spirv_AtomicCompareExchange" in llvm
