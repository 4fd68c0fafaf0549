"""The shared-memory staged GEMM of the NVIDIA backend without a GPU: the warp grid of a
program, the layouts split over it, the padded stage rows against the bank model of the
target, and the PTX of a staged K loop (cp.async ring, ldmatrix, mma.sync at the floor
count, no spill) assembled by ptxas.  Results on a GPU: benchmarks/vs_cuda.py."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.codegen.nvptx.layouts import WARP, Layout
from xetile_dsl.codegen.nvptx.smem_pipeline import pitch_bytes
from xetile_dsl.errors import CompilationError, UsageError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.ops.rows import softmax_kernel
import xetile_dsl.language as xt
from xetile_dsl.targets.nvidia import NV_TARGETS, SM90

from .test_nvptx_compile import GEMM_SIG, ptxas_report


def _held(layout: Layout) -> dict:
    """How many (warp, lane) pairs hold each element of the tile, from the layout's bit
    fields and warp steps alone."""
    (rs, rm, rk), (cs, cm, ck) = layout.lane_base()
    step_r, step_c = layout.warp_steps()
    wr, wc = layout.warps
    seen: dict = {}
    for warp in range(wr * wc):
        for lane in range(WARP):
            r0 = ((lane >> rs) & rm) * rk + (warp // wc) * step_r
            c0 = ((lane >> cs) & cm) * ck + (warp % wc) * step_c
            for dr, dc in layout.slots():
                seen[(r0 + dr, c0 + dc)] = seen.get((r0 + dr, c0 + dc), 0) + 1
    return seen


@pytest.mark.parametrize("kind,shape,warps,times", [("mma_c", (128, 128), (2, 2), 1), ("mma_c", (128, 256), (2, 4), 1),
                                                    ("mma_a", (128, 32), (2, 2), 2), ("mma_b", (32, 256), (2, 4), 2),
                                                    ("mma_c_row", (1, 128), (2, 2), 16)])
def test_layouts_over_warps(kind, shape, warps, times):
    """Over the program's warps, C's blocks hold every element once; A's rows are held by
    each warp of a warp row (warps[1] times), B's columns by each of a column (warps[0]);
    a bias row of C's columns by the 8 lanes of one column pair in each warp row."""
    seen = _held(Layout(kind, shape, warps))
    assert set(seen) == {(r, c) for r in range(shape[0]) for c in range(shape[1])}
    assert set(seen.values()) == {times}


@pytest.mark.parametrize("cols", [16, 32, 64, 128, 256])
def test_stage_rows_avoid_bank_conflicts(cols):
    """The 8 row addresses of one ldmatrix phase (16 bytes each, rows 0-7 of a stage) fall
    in 8 different 16-byte groups of the target's banks (32 banks of 4 bytes)."""
    groups = SM90.smem_banks * SM90.smem_bank_bytes // 16
    pitch = pitch_bytes(cols, 2)
    assert pitch >= 2 * cols and pitch % 16 == 0
    for col in range(0, 2 * cols, 16):
        assert len({((row * pitch + col) // 16) % groups for row in range(8)}) == 8


@pytest.mark.parametrize("target,dtype", [("sm90", "f16"), ("sm80", "bf16")])
def test_staged_gemm_ptx(target, dtype, tmp_path):
    """A 128x128x32 GEMM: several warps a program (stage text ``nv.warps``), a ring of
    ``smem_stages`` stages of padded rows, cp.async copies, ldmatrix (``.trans`` for B)
    and per warp the floor count of m16n8k16 per K step; ptxas: no spill, no stack
    frame, at most 255 registers."""
    t = NV_TARGETS[target]
    sig = {**GEMM_SIG, "a": f"{dtype}[:,:]", "b": f"{dtype}[:,:]"}
    k = xd.compile(matmul_kernel, sig, {"BM": 128, "BN": 128, "BK": 32}, target=target)
    wm, wn = t.mma_warp_tile
    grid = (128 // wm, 128 // wn)
    assert k.threads == 32 * grid[0] * grid[1]
    assert f'nv.warps = "{grid[0]}x{grid[1]}"' in k.asm["nv"]
    assert f"nv.stages = {t.smem_stages} : i64" in k.asm["nv"]
    assert 'nv.smem = "ldmatrix"' in k.asm["nv"] and 'nv.smem = "ldmatrix.trans"' in k.asm["nv"]
    stage = 128 * pitch_bytes(32, 2) + 32 * pitch_bytes(128, 2)
    assert k.smem_bytes == t.smem_stages * stage
    ptx = k.ptx
    # the floor: (64 / 16) x (wn / 8) x (32 / 16) mma a warp per K step, all in the loop
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16", ptx)) == (wm // 16) * (wn // 8) * 2
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared", ptx)) == (wm // 16) * 2
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared", ptx)) == 2 * (wn // 16)
    # chunks of 16 bytes a thread: A 128x32 and B 32x128 are 512 each; S - 1 trips ahead
    # plus one refill a trip
    per_thread = 2 * 512 // k.threads
    assert len(re.findall(r"cp\.async\.cg\.shared\.global", ptx)) == t.smem_stages * per_thread
    assert "cp.async.wait_group" in ptx and "bar.sync" in ptx and ".extern .shared" in ptx
    report = ptxas_report(ptx, t.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    regs = int(re.search(r"Used (\d+) registers", report).group(1))
    assert regs <= t.regs_per_thread


def test_launch_options_pick_warps_and_stages():
    """num_warps splits C over that many warps; num_stages sizes the ring (1: no staging,
    the per-lane global loads); a count the tile cannot split is a located error."""
    consts = {"BM": 128, "BN": 128, "BK": 32}
    eight = xd.compile(matmul_kernel, GEMM_SIG, consts, target="sm90", num_warps=8, num_stages=2)
    assert eight.threads == 256 and eight.smem_bytes == 2 * (128 * 80 + 32 * 272)
    flat = xd.compile(matmul_kernel, {**GEMM_SIG}, {"BM": 32, "BN": 32, "BK": 32}, target="sm90", num_stages=1)
    assert flat.smem_bytes == 0 and "cp.async" not in flat.ptx and "nv.stages" not in flat.asm["nv"]
    with pytest.raises(CompilationError, match=r"matmul.py:\d+.*num_warps=16 does not split"):
        xd.compile(matmul_kernel, GEMM_SIG, {"BM": 32, "BN": 32, "BK": 32}, target="sm90", num_warps=16)
    # row tiles split along their columns (parts of a multiple of 32): 256 columns take 8 warps, not 16
    with pytest.raises(CompilationError, match=r"num_warps=16 does not split"):
        xd.compile(softmax_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "N": "i32"},
                   {"OUT": xt.float32, "BM": 4, "BC": 256}, target="sm90", num_warps=16)


class FakeCudaTensor:
    """A 2-D array with ``__cuda_array_interface__`` and nothing behind it."""

    def __init__(self, shape, dtype=np.float16):
        self.shape, self.ndim, self.dtype = shape, len(shape), np.dtype(dtype)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": self.dtype.str, "data": (0, False), "version": 3}


def test_ops_on_cuda_arrays_take_the_nvidia_tiles():
    """An op on CUDA arrays resolves to an NVIDIA target (sm90 without a GPU to ask) and
    its ops tiles: the GEMM tile whatever M (sm90: wgmma's 128x256x64, 128x128x64 with
    an epilogue fused; sm80: mma.sync's 128x128x32), the row ops' (4, 256); transposed
    operands are copied row-major there (column-major tiles are not lowered)."""
    from xetile_dsl import ops
    from xetile_dsl.ops import configs
    a = FakeCudaTensor((100, 64))
    target = configs.resolve_target(None, a)
    assert target in NV_TARGETS and configs.is_nvidia(target)
    assert configs.gemm_tiles("sm90", "float16", m=5) == (128, 256, 64)
    assert configs.gemm_tiles("sm90", "bfloat16", epilogue=True) == (128, 128, 64)
    assert configs.gemm_tiles("sm80", "float16", m=5) == configs.gemm_tiles("sm80", "float16", epilogue=True) \
        == (128, 128, 32)
    assert configs.row_tiles("sm80") == (4, 256)
    from xetile_dsl.ops.matmul import row_major_operands
    x = np.arange(6, dtype=np.float16).reshape(3, 2)
    a2, b2, ta, tb = row_major_operands("sm90", x, x, True, False)
    assert (ta, tb) == (False, False) and a2.flags.c_contiguous and (a2 == x.T).all() and b2 is x
    assert row_major_operands("pvc", x, x, True, False)[2] is True
