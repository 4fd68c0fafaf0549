"""Scalar (uniform) arithmetic through the whole pipeline on the CPU device, PVC and ARC
flavours: every scalar cast the front end emits (sitofp, uitofp, fptosi, fptoui, extf,
truncf, extsi, extui, trunci, index_cast), scalar math and ``xt.num_subgroups()``,
against numpy (and the interpreter)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

LANES = {"cpu-pvc": 16, "cpu-arc": 8, "interpret": 16}
ROWS = 14


@xd.jit
def scalar_casts(out, k, u, s, t, big, W: xt.constexpr):
    """Row i of ``out`` (ROWS x W, f32) is filled with the i-th scalar result."""
    r0 = xt.astype(k, xt.float32)  # sitofp i32
    r1 = xt.astype(u, xt.float32)  # uitofp u8
    r2 = xt.astype(xt.astype(s, xt.int32), xt.float32)  # fptosi
    r3 = xt.astype(xt.astype(t, xt.uint8), xt.float32)  # fptoui
    r4 = xt.astype(xt.astype(t, xt.float16), xt.float32)  # truncf + extf (f16)
    r5 = xt.astype(xt.astype(t, xt.bfloat16), xt.float32)  # truncf + extf (bf16)
    r6 = xt.astype(xt.astype(k, xt.int64) * big, xt.float32)  # extsi to i64
    r7 = xt.astype(xt.astype(u, xt.int32) - 256, xt.float32)  # extui (u8 -> i32)
    r8 = xt.astype(xt.astype(big + k, xt.uint8), xt.float32)  # trunci (i64 -> u8)
    r9 = xt.astype(xt.program_id(0), xt.float32)  # index_cast + sitofp
    r10 = xt.astype(xt.num_subgroups(), xt.float32)  # gpu.num_subgroups
    r11 = xt.sqrt(t) + xt.exp(s)  # scalar math
    r12 = xt.astype(k // 2, xt.float32) + xt.astype((k * k) % 5, xt.float32)  # scalar floordiv / rem
    r13 = xt.astype(xt.astype(u, xt.int8), xt.float32)  # u8 -> i8: same bits
    xt.store_tile(xt.full([1, W], r0, xt.float32), xt.init_tile(out, [0, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r1, xt.float32), xt.init_tile(out, [1, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r2, xt.float32), xt.init_tile(out, [2, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r3, xt.float32), xt.init_tile(out, [3, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r4, xt.float32), xt.init_tile(out, [4, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r5, xt.float32), xt.init_tile(out, [5, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r6, xt.float32), xt.init_tile(out, [6, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r7, xt.float32), xt.init_tile(out, [7, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r8, xt.float32), xt.init_tile(out, [8, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r9, xt.float32), xt.init_tile(out, [9, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r10, xt.float32), xt.init_tile(out, [10, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r11, xt.float32), xt.init_tile(out, [11, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r12, xt.float32), xt.init_tile(out, [12, 0], [1, W]))
    xt.store_tile(xt.full([1, W], r13, xt.float32), xt.init_tile(out, [13, 0], [1, W]))


def _expected(k, u, s, t, big, pid, n_sg):
    f32 = np.float32
    return np.array([
        f32(k), f32(u), f32(np.trunc(s)), f32(np.trunc(t)),
        f32(np.float16(t)), f32(ml_dtypes.bfloat16(t)),
        f32(np.int64(k) * big), f32(int(u) - 256), f32((big + k) % 256), f32(pid), f32(n_sg),
        np.sqrt(f32(t)) + np.exp(f32(s)), f32(k // 2 + (k * k) % 5), f32(np.uint8(u).view(np.int8)),
    ], np.float32)


SCALARS = [(-7, 200, -2.75, 250.9, 2**33), (11, 3, 3.5, 0.3333, -(2**40) + 5)]


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("values", SCALARS, ids=["neg", "pos"])
def test_scalar_casts_match_numpy(target, values):
    k, u, s, t, big = values
    W = LANES[target]
    out = np.full((ROWS, W), np.nan, np.float32)
    scalar_casts.on(target)[(1,)](out, np.int32(k), np.uint8(u), np.float32(s), np.float32(t), np.int64(big), W=W)
    want = _expected(k, u, s, t, big, 0, 1)
    tol = np.zeros(ROWS)
    tol[11] = 1e-6 * abs(want[11])  # the device's sqrt/exp are within a few ulp
    for row in range(ROWS):
        np.testing.assert_allclose(out[row], want[row], rtol=0, atol=tol[row], err_msg=f"row {row}")


ROW_BANDS = xt.wg_map(sg_layout=[4, 1], sg_data=[16, 32])


@xd.jit
def subgroup_numbers(x, out):
    """out = x * num_subgroups + subgroup_id over a 64x32 workgroup tile of 4 subgroups."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [64, 32], wg_map=ROW_BANDS))
    n = xt.astype(xt.num_subgroups(), xt.float32)
    sg = xt.astype(xt.subgroup_id(), xt.float32)
    xt.store_tile(v * n + sg, xt.init_tile(out, [0, 0], [64, 32], wg_map=ROW_BANDS))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
def test_num_subgroups_in_a_workgroup_kernel(target):
    x = np.random.default_rng(2).integers(-8, 8, (64, 32)).astype(np.float32)
    out = np.full_like(x, np.nan)
    subgroup_numbers.on(target)[(1,)](x, out)
    band = np.repeat(np.arange(4, dtype=np.float32), 16)[:, None]  # subgroup i owns rows 16i..16i+15
    np.testing.assert_array_equal(out, x * 4 + band)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_scalar_casts_compile_for_the_gpu(target):
    """Intel's offline compiler accepts the scalar conversions and get_num_sub_groups."""
    from conftest_tools import require_ocloc

    require_ocloc()
    sig = {"out": "f32[:,:]", "k": "i32", "u": "u8", "s": "f32", "t": "f32", "big": "i64"}
    compiled = xd.compile(scalar_casts, sig, {"W": LANES[f"cpu-{target}"]}, target=target)
    llvm = compiled.asm["llvm"]
    for inst in ("sitofp", "uitofp", "fptosi", "fptoui", "fpext", "fptrunc", "sext", "zext", "get_num_sub_groups"):
        assert inst in llvm, inst
    assert "mov" in compiled.asm["isa"]  # ocloc produced code for the kernel
