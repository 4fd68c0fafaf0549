"""The GPU form of the builtins through IGC: a load -> DPAS -> store kernel must compile
to DPAS (plus 2D block messages on targets that have them), with no unresolved call."""
from __future__ import annotations

import pytest
from llvmlite import ir

from cpu_launch import build_kernel
from xetile_dsl.targets.target import ARC, PVC


def _c(v):
    return ir.Constant(ir.IntType(32), v)


def _gemm_tile_body(target):
    n, m, k = target.subgroup_size, 8, 16
    a_wd = (1, 256 // n // 16)  # 16-bit A: one element per lane on 16 lanes, a pair on 8

    def body(bi, builder, args):
        a = builder.call(bi.load_2d(16, m, k, 1, (1, n), a_wd), [args[0], _c(64), _c(m), _c(64), _c(0), _c(0)])
        b = builder.call(bi.load_2d(16, k, n, 1, (1, n), (2, 1)), [args[1], _c(64), _c(k), _c(64), _c(0), _c(0)])
        dpas = bi.dpas("f16", "f16", "f32", m)
        a_ty, b_ty, c_ty = dpas.function_type.args
        d = builder.call(dpas, [builder.bitcast(a, a_ty), builder.bitcast(b, b_ty), ir.Constant(c_ty, None)])
        builder.call(bi.prefetch_2d(16, 8, 16, 1), [args[0], _c(64), _c(m), _c(64), _c(0), _c(8)])
        store = bi.store_2d(32, m, n, (1, n), (1, 1))
        builder.call(store, [args[2], _c(64), _c(m), _c(64), _c(0), _c(0), builder.bitcast(d, store.function_type.args[-1])])

    return body


@pytest.mark.parametrize("target", [PVC, ARC], ids=lambda t: t.name)
def test_gemm_tile_isa(ocloc_path, target):
    from xetile_dsl.tools import ocloc

    spirv, _ = build_kernel(target, False, 3, _gemm_tile_body(target))
    zebin = ocloc.compile_spirv(spirv, target.ocloc_device)
    problems = ocloc.check_isa(zebin, "k", expect_dpas=True, expect_block2d=target.has_2d_block_io,
                               expect_simd=target.subgroup_size)
    assert problems == []
