"""The NVIDIA backend without a GPU: the sm80/sm90 target entries, the warp layouts, the
stages of a compile (xetile, nv, llvm, ptx), the PTX assembled by ptxas (no spill, no
local memory, the expected mma.sync count), located errors for what the first slice does
not do, and a launch on CUDA arrays reaching the driver backend.

ptxas comes from the CUDA toolkit or the ``nvidia-cuda-nvcc`` wheel; without one the
assembly tests are skipped (failed under XETILE_REQUIRE_PTXAS=1).  Results on a real GPU
are checked by benchmarks/vs_cuda.py (docs/nvidia.md records a run)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from xetile_dsl import knobs

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx.layouts import WARP, Layout
from xetile_dsl.errors import CompilationError, LaunchError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.ops.rows import softmax_kernel
from xetile_dsl.targets.nvidia import NV_TARGETS, SM80, SM90, for_compute_capability


@xd.jit
def add_kernel(x, y, out, BLOCK: xt.constexpr):
    col = xt.program_id(0) * BLOCK
    tx = xt.init_tile(x, [0, col], [1, BLOCK])
    ty = xt.init_tile(y, [0, col], [1, BLOCK])
    xt.store_tile(xt.load_tile(tx) + xt.load_tile(ty), xt.init_tile(out, [0, col], [1, BLOCK]))


@xd.jit
def int8_mma_kernel(a, b, c):
    acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [16, 32])), xt.load_tile(xt.init_tile(b, [0, 0], [32, 8])))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [16, 8]))


GEMM_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _wheel_ptxas() -> str | None:
    """ptxas of the ``nvidia-cuda-nvcc-cu12`` wheel (the ``[test]`` extra), if installed."""
    try:
        import nvidia.cuda_nvcc
    except ImportError:
        return None
    for root in nvidia.cuda_nvcc.__path__:
        path = os.path.join(root, "bin", "ptxas")
        if os.access(path, os.X_OK):
            return path
    return None


def require_ptxas() -> str:
    path = shutil.which("ptxas") or _wheel_ptxas()
    if path is None:
        if knobs.REQUIRE_PTXAS.get():
            pytest.fail("XETILE_REQUIRE_PTXAS=1 but no ptxas on PATH", pytrace=False)
        pytest.skip("ptxas unavailable (CUDA toolkit or the nvidia-cuda-nvcc wheel)")
    return path


def ptxas_report(ptx: str, arch: str, tmp_path) -> str:
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    run = subprocess.run([require_ptxas(), f"-arch={arch}", "-v", str(src), "-o", str(tmp_path / "k.cubin")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return run.stderr


def test_target_entries():
    assert set(NV_TARGETS) == {"sm80", "sm90"}
    assert SM90.ptx_arch == "sm_90" and SM80.ptx_arch == "sm_80"
    assert SM90.warp_size == SM80.warp_size == 32 and SM90.warpgroup_warps == 4 and SM90.tma and not SM80.tma
    assert (SM90.mma_for("f16", "f16").m, SM90.mma_for("f16", "f16").n, SM90.mma_for("f16", "f16").k) == (16, 8, 16)
    assert SM80.mma_for("i8", "i8").k == 32 and SM80.mma_for("f32", "f32").k == 8   # f32 inputs as tf32
    assert SM90.wgmma[0].m == 64 and not SM80.wgmma
    assert SM90.smem_per_block > SM80.smem_per_block
    assert for_compute_capability(9, 0) is SM90 and for_compute_capability(8, 6) is SM80


@pytest.mark.parametrize("kind,shape", [("cols", (4, 256)), ("rep", (4, 1)), ("mma_a", (32, 32)),
                                        ("mma_b", (32, 64)), ("mma_c", (32, 32))])
def test_layouts_cover_each_element(kind, shape):
    """Over the 32 lanes, a layout holds every element of the tile: once for the
    distributed kinds, in every lane for ``rep``."""
    layout = Layout(kind, shape)
    (rs, rm, rk), (cs, cm, ck) = layout.lane_base()
    seen = {}
    for lane in range(WARP):
        r0, c0 = ((lane >> rs) & rm) * rk, ((lane >> cs) & cm) * ck
        for dr, dc in layout.slots():
            seen[(r0 + dr, c0 + dc)] = seen.get((r0 + dr, c0 + dc), 0) + 1
    assert set(seen) == {(r, c) for r in range(shape[0]) for c in range(shape[1])}
    assert set(seen.values()) == {WARP if kind == "rep" else 1}


def test_mma_a_fragment_is_the_ptx_layout():
    """Lane 5 (groupID 1, threadID_in_group 1) holds a0..a7 of m16n8k16's A at rows 1, 9
    and columns 2, 3, 10, 11 (PTX ISA, "Matrix Fragments for mma.m16n8k16")."""
    layout = Layout("mma_a", (16, 16))
    (rs, rm, rk), (cs, cm, ck) = layout.lane_base()
    lane = 5
    r0, c0 = ((lane >> rs) & rm) * rk, ((lane >> cs) & cm) * ck
    assert [(r0 + dr, c0 + dc) for dr, dc in layout.slots()] == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11),
                                                                  (9, 10), (9, 11)]


@pytest.mark.parametrize("target", ["sm90", "sm80"])
def test_stages_and_ptxas(target, tmp_path):
    """Vector add, softmax and a GEMM: every stage printable; the PTX assembles for the
    architecture with no spill and no stack frame (no local memory)."""
    cases = [(add_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "out": "f32[:,:]"}, {"BLOCK": 256}),
             (softmax_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "N": "i32"}, {"OUT": xt.float32, "BM": 4, "BC": 256}),
             (matmul_kernel, GEMM_SIG, {"BM": 32, "BN": 32, "BK": 32})]
    arch = NV_TARGETS[target].ptx_arch
    for fn, sig, consts in cases:
        k = xd.compile(fn, sig, consts, target=target)
        assert list(k.asm) == ["xetile", "nv", "llvm", "ptx"]
        assert 'nv.layout = "' in k.asm["nv"] and "llvm.nvvm.read.ptx.sreg.tid.x" in k.asm["llvm"]
        assert f".target {arch}" in k.ptx and f".entry {k.name}(" in k.ptx
        report = ptxas_report(k.ptx, arch, tmp_path)
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


def test_gemm_mma_count_and_shuffles():
    """A 32x32 tile over K steps of 32: 2 x 4 x 2 = 16 m16n8k16 per step, in the loop body;
    softmax's row reductions are 5-step butterflies (shfl.sync.bfly) per row and pass."""
    k = xd.compile(matmul_kernel, GEMM_SIG, {"BM": 32, "BN": 32, "BK": 32}, target="sm90")
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", k.ptx)) == 16
    s = xd.compile(softmax_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "N": "i32"},
                   {"OUT": xt.float32, "BM": 4, "BC": 256}, target="sm90")
    # two reductions (max, sum) of 4 rows, 5 butterfly steps each
    assert len(re.findall(r"shfl\.sync\.bfly\.b32", s.ptx)) == 2 * 4 * 5


def test_unsupported_mma_is_located():
    """int8 without an accumulator runs (mma.sync s8, s32 zeros); a pair with no mma.sync
    form is a located error naming the legal pairs."""
    k = xd.compile(int8_mma_kernel, {"a": "i8[:,:]", "b": "i8[:,:]", "c": "i32[:,:]"}, {}, target="sm90")
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.s32\.s8\.s8\.s32", k.ptx)) == 2
    with pytest.raises(CompilationError, match=r"test_nvptx_compile.py:\d+.*f16 x bf16 has no matrix engine form "
                                               r"on sm90; legal input pairs: .*i8xi8, tf32xtf32"):
        xd.compile(int8_mma_kernel, {"a": "f16[:,:]", "b": "bf16[:,:]", "c": "f32[:,:]"}, {}, target="sm90")


class FakeCudaArray:
    """An object with ``__cuda_array_interface__`` and nothing behind it."""

    def __init__(self, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0, False), "version": 3}


def _driver_has_gpu() -> bool:
    try:
        from cuda.bindings import driver
        return int(driver.cuInit(0)[0]) == 0 and driver.cuDeviceGetCount()[1] > 0
    except Exception:  # noqa: BLE001 - no cuda-python, or no driver library
        return False


@pytest.mark.parametrize("target", [None, "sm80"])
def test_cuda_arrays_take_the_nvidia_path(target):
    """A launch on CUDA arrays compiles for an NVIDIA target and reaches the CUDA driver
    backend: without cuda-python its LaunchError, without a GPU the driver's error."""
    if _driver_has_gpu():
        pytest.skip("a CUDA GPU is present: the fake arrays' null pointers would reach it")
    x, y, out = (FakeCudaArray((1, 512)) for _ in range(3))
    with pytest.raises(LaunchError, match="needs cuda-python|CUDA driver"):
        (add_kernel.on(target) if target else add_kernel)[(2,)](x, y, out, BLOCK=256)
