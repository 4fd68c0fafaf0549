"""Loops with several K iterations on the OpenCL CPU device vs numpy.

Regression: in the PVC flavour (16 lanes, 2D block reads), a K loop whose trip count
is only known at run time lost the first VNNI row of every B block after the first
iteration (the error matrix had rank KB-1).  Intel's CPU compiler miscompiled the
loads' row ``y + 2*(lane/16)``; the per-lane addressing now folds ``lane/16`` to 0.
A single iteration, or a constant trip count (fully unrolled), hid the bug.
"""
from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

from cpu_launch import build_kernel, cpu_queue, run
import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.targets.target import ARC, PVC

I32, I64 = ir.IntType(32), ir.IntType(64)


def _const(v):
    return ir.Constant(I32, v)


def _ints(rng, shape):
    """Small integers as f16: every partial sum is exact in f32."""
    return rng.integers(-2, 3, size=shape).astype(np.float16)


@pytest.mark.parametrize("gather", [False, True], ids=["block2d", "gather"])
@pytest.mark.parametrize("target", [PVC, ARC], ids=lambda t: t.name)
def test_k_loop_with_runtime_trip_count(target, gather, monkeypatch):
    """``for k in range(0, K, 16)`` (K from memory): load A and B, DPAS, accumulate in
    loop-carried registers, store after the loop."""
    if gather:  # the plain-load path must be right too, not only the block builtins
        from xetile_dsl.codegen.builtins import block2d as builtins_block2d

        monkeypatch.setattr(builtins_block2d, "load_kind", lambda *args: "gather")
    n, m, kb = target.subgroup_size, 8, 4
    k_total = 16 * kb
    rng = np.random.default_rng(7)
    a, b = _ints(rng, (m, k_total)), _ints(rng, (k_total, n))
    c = np.zeros((m, n), np.float32)
    a_wd = (1, 16 * 16 // n // 16)  # one 16/32-bit unit of A per lane (sg_map rules)

    def body(bi, builder, args):
        fn = builder.function
        entry = builder.block
        header, loop, done = (fn.append_basic_block(x) for x in ("header", "loop", "done"))
        dpas = bi.dpas("f16", "f16", "f32", m)
        sig = dpas.function_type
        trip = builder.sext(builder.load(args[3], typ=I32), I64)
        builder.branch(header)
        builder.position_at_end(header)
        iv = builder.phi(I64)
        x = builder.phi(I32)
        acc = builder.phi(sig.args[2])
        iv.add_incoming(ir.Constant(I64, 0), entry)
        x.add_incoming(_const(0), entry)
        acc.add_incoming(ir.Constant(sig.args[2], None), entry)
        builder.cbranch(builder.icmp_signed("<", iv, trip), loop, done)
        builder.position_at_end(loop)
        a_frag = builder.call(bi.load_2d(16, m, 16, 1, (1, n), a_wd),
                              [args[0], _const(k_total * 2), _const(m), _const(k_total * 2), x, _const(0)])
        b_frag = builder.call(bi.load_2d(16, 16, n, 1, (1, n), (2, 1)),
                              [args[1], _const(n * 2), _const(k_total), _const(n * 2), _const(0), x])
        d = builder.call(dpas, [builder.bitcast(a_frag, sig.args[0]), builder.bitcast(b_frag, sig.args[1]), acc])
        acc.add_incoming(d, builder.block)
        x.add_incoming(builder.add(x, _const(16)), builder.block)
        iv.add_incoming(builder.add(iv, ir.Constant(I64, 16)), builder.block)
        builder.branch(header)
        builder.position_at_end(done)
        store = bi.store_2d(32, m, n, (1, n), (1, 1))
        builder.call(store, [args[2], _const(n * 4), _const(m), _const(n * 4), _const(0), _const(0),
                             builder.bitcast(acc, store.function_type.args[-1])])

    spirv, _ = build_kernel(target, True, 4, body)
    trip = np.full(16, k_total, np.int32)
    _, _, got, _ = run(spirv, [a, b, c, trip], n)
    np.testing.assert_array_equal(got, a.astype(np.float32) @ b.astype(np.float32))


def matmul(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ B, one BM x BN tile per workgroup, K in steps of BK (module level: the
    frontend resolves ``xt`` among the function's globals)."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        acc = xt.tile_mma(va, vb, acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    tc = xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN])
    xt.store_tile(acc, tc)


@pytest.mark.parametrize("bk,k_total", [(16, 32), (16, 64), (32, 64)])
@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc"])
def test_jit_gemm_k_loop(flavour, bk, k_total, tmp_path, monkeypatch):
    """The whole pipeline (Python -> XeTile -> ... -> SPIR-V) for a tiled GEMM whose
    scf.for runs ``k_total / bk`` times, on a 2x2 grid."""
    cpu_queue()  # skips when the OpenCL CPU device is missing
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    m = n = 32
    rng = np.random.default_rng(bk + k_total)
    a, b = _ints(rng, (m, k_total)), _ints(rng, (k_total, n))
    c = np.zeros((m, n), np.float32)
    xd.jit(matmul).on(flavour)[(2, 2)](a, b, c, k_total, BM=16, BN=16, BK=bk)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@xd.jit
def _count_steps(c, K, LB: xt.constexpr):
    """Counts the iterations of ``range(LB, K, 16)`` in every element of an 8x16 tile."""
    acc = xt.zeros([8, 16], xt.float32)
    for k in range(LB, K, 16):
        acc = acc + 1.0
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [8, 16]))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_32bit_loop_counter_trip_counts(flavour):
    """``scf.for`` with constant start/step and an i32 bound runs a 32-bit counter with an
    unsigned compare against max(K, 0) (codegen/simt_to_llvm.py, _narrow_loop_bounds): the same
    iterations as Python's range for zero, negative, non-multiple and plain bounds."""
    for lb in (0, 8):
        for k in (-5, 0, 7, 8, 40, 64):
            c = np.full((8, 16), -1, np.float32)
            _count_steps.on(f"cpu-{flavour}")[(1,)](c, k, LB=lb)
            np.testing.assert_array_equal(c, np.full((8, 16), len(range(lb, k, 16)), np.float32))


@xd.jit
def _column_block_sums(a, out, K, START: xt.constexpr):
    """Sum of the 8x16 blocks of ``a`` at columns ``range(START, K, 16)``; the counter is
    used in the body (the block's column)."""
    acc = xt.zeros([8, 16], xt.float32)
    for k in range(START, K, 16):
        acc = acc + xt.load_tile(xt.init_tile(a, [0, k], [8, 16]))
    xt.store_tile(acc, xt.init_tile(out, [0, 0], [8, 16]))


@pytest.mark.parametrize("start,k_total", [(0, -16), (0, -(2**31)), (0, 0), (0, 40), (16, 48), (0, 64)])
def test_narrowed_loop_counter_bounds(start, k_total):
    """Loops counting from a constant to an i32 bound run on a 32-bit counter
    (codegen/simt_to_llvm.py, _narrow_loop_bounds): a negative bound, even INT32_MIN,
    runs no iteration, a bound that is no multiple of the step runs Python's range."""
    cpu_queue()
    a = np.arange(8 * 64, dtype=np.float32).reshape(8, 64) % 7
    out = np.full((8, 16), -1, np.float32)
    _column_block_sums.on("cpu-pvc")[(1,)](a, out, k_total, START=start)
    ref = sum((a[:, k:k + 16] for k in range(start, k_total, 16)), np.zeros((8, 16), np.float32))
    np.testing.assert_array_equal(out, ref)
