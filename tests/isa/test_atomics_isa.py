"""Atomics with memory order in PVC machine code (ocloc + iga64): a spin lock is an
atomic compare-exchange message (``atomic_icas``) and its release an atomic store; the
order shows as LSC fences around them, at the asked scope -- none for relaxed, an
invalidating fence after an acquire, a fence before a release (``.gpu`` for device scope,
``.group``/``.tile`` for workgroup scope) -- and ``xt.fence`` is such a fence (with an SLM
fence too: it orders shared local memory as well)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from kernels.atomics import publish_kernel, spin_lock_kernel, tile_cas_kernel
from xetile_dsl.tools import ocloc

_MESSAGE = re.compile(r"//.*?;\s*((?:atomic|fence)\S*)")


def _messages(isa: str) -> list[str]:
    return [m.group(1) for m in map(_MESSAGE.search, isa.splitlines()) if m]


@pytest.mark.parametrize("acq,rel,scope,expect", [
    ("relaxed", "relaxed", "device", ["atomic_icas.ugm.d32.a64", "atomic_store.ugm.d32.a64"]),
    ("acquire", "release", "device", ["atomic_icas.ugm.d32.a64", "fence.ugm.invalidate.gpu", "fence.ugm.none.gpu",
                                      "atomic_store.ugm.d32.a64"]),
    ("acquire", "release", "workgroup", ["atomic_icas.ugm.d32.a64", "fence.ugm.invalidate.tile",
                                         "fence.ugm.none.group", "atomic_store.ugm.d32.a64"]),
    ("acq_rel", "acq_rel", "device", ["fence.ugm.none.gpu", "atomic_icas.ugm.d32.a64", "fence.ugm.invalidate.gpu",
                                      "fence.ugm.none.gpu", "atomic_store.ugm.d32.a64",
                                      "fence.ugm.invalidate.gpu"]),
])
def test_spin_lock_is_a_compare_exchange_with_its_fences(acq, rel, scope, expect, ocloc_path):
    kernel = xd.compile(spin_lock_kernel, {"lock": "i32[:,:]", "total": "f32[:,:]"},
                        {"SEM_ACQ": acq, "SEM_REL": rel, "SCOPE": scope}, target="pvc")
    assert ocloc.check_isa(kernel.asm["zebin"], "spin_lock_kernel", expect_dpas=False, expect_simd=16) == []
    assert _messages(kernel.asm["isa"]) == expect


@pytest.mark.parametrize("sem,scope,fence", [("release", "device", "fence.ugm.none.gpu"),
                                             ("acq_rel", "workgroup", "fence.ugm.none.group")])
def test_fence_is_an_lsc_fence(sem, scope, fence, ocloc_path):
    kernel = xd.compile(publish_kernel, {"data": "f32[:,:]", "flag": "i32[:,:]"}, {"SEM": sem, "SCOPE": scope},
                        target="pvc")
    messages = _messages(kernel.asm["isa"])
    assert fence in messages[:-1] and messages[-1] == "atomic_store.ugm.d32.a64", messages


@pytest.mark.parametrize("sem,scope,dtype,expect", [
    ("relaxed", "device", "i32", ["atomic_icas.ugm.d32.a64"]),
    ("acquire", "workgroup", "i32", ["atomic_icas.ugm.d32.a64", "fence.ugm.invalidate.tile"]),
    ("release", "device", "i64", ["fence.ugm.none.gpu", "atomic_icas.ugm.d64.a64"]),
    ("acq_rel", "device", "i32", ["fence.ugm.none.gpu", "atomic_icas.ugm.d32.a64", "fence.ugm.invalidate.gpu"]),
])
def test_tile_compare_exchange_is_one_icas_per_row(sem, scope, dtype, expect, ocloc_path):
    """The tile form of atomic_cas: two [4, 16] CAS tiles are 8 SIMD16 compare-exchange
    messages (one per row: there is no block atomic), each with its order's fences."""
    sig = {name: f"{dtype}[:,:]" for name in ("x", "cmp", "val", "old", "claim", "seen")}
    kernel = xd.compile(tile_cas_kernel, sig, {"SEM": sem, "SCOPE": scope}, target="pvc")
    assert ocloc.check_isa(kernel.asm["zebin"], "tile_cas_kernel", expect_dpas=False, expect_simd=16) == []
    assert _messages(kernel.asm["isa"]) == expect * 8
