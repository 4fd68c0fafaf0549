"""A builtin defined again in a later module of the same process reuses the LLVM IR text
printed for it the first time (codegen/intel_builtins.py): the module's text is exactly
what printing every function anew gives, and the reuse really happens (counted)."""
from __future__ import annotations

import re
import warnings

import pytest

import xetile_dsl as xd
from xetile_dsl.codegen import intel_builtins
from xetile_dsl.kernels.matmul import matmul_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _llvm(consts: dict, target: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xd.compile(matmul_kernel, SIG, consts, target=target).asm["llvm"]


def _defined(llvm: str) -> list[str]:
    return re.findall(r'^define internal spir_func .*? @"([^"]+)"', llvm, re.M)


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_reused_builtin_texts_print_the_same_module(target, monkeypatch):
    monkeypatch.setattr(intel_builtins, "_TEXTS", {})
    small, large = {"BM": 8, "BN": 16, "BK": 16}, {"BM": 32, "BN": 32, "BK": 16}
    fresh_large = _llvm(large, target)                  # every builtin printed anew
    intel_builtins._TEXTS.clear()
    fresh_small = _llvm(small, target)
    before = dict(intel_builtins.text_stats)
    again_large = _llvm(large, target)                  # shares the DPAS with the small GEMM
    again_small = _llvm(small, target)                  # every builtin printed before
    shared = set(_defined(fresh_small)) & set(_defined(fresh_large))
    assert shared, "the two GEMMs share no builtin: the test sees no reuse"
    assert again_large == fresh_large and again_small == fresh_small
    reused = intel_builtins.text_stats["reused"] - before["reused"]
    assert reused == len(shared) + len(_defined(fresh_small))
