"""Codegen of the atomics: each order and scope is the SPIR-V builtin call with the
constant scope and memory semantics LLVM's SPIR-V backend keeps (storage-class bit
included); an f32 add is OpAtomicFAddEXT only on a target whose ``atomic_float_add``
lists f32, a compare-exchange loop elsewhere and for f16."""
from __future__ import annotations

from dataclasses import replace

import pytest

import xetile_dsl as xd
from kernels.atomics import element_rmw_kernel, spin_lock_kernel
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
