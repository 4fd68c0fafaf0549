"""The wgmma GEMM of sm90 (codegen/nvptx/wgmma_gemm.py) without a GPU: the plan a staged
K loop takes, the PTX of its ring (one bounds check a tile: interior tiles' cp.async carry
no source size and no 64-bit clamp, edge tiles' clamped copies sit in a loop of their
own) and ptxas's view of it (the floor count of wgmma a K step, no serialization of the
wgmma, no spill, registers in budget), for the ops tiles with and without an epilogue.
Results on a GPU and the SASS side by side with Triton's: benchmarks/vs_cuda.py."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx.wgmma_gemm import ALIGN_PAD, stage_bytes
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul import ACTIVATIONS, matmul_kernel as ops_kernel
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import GEMM_SIG, ptxas_report

#: ptxas's warning where it runs the wgmma of a loop one after the other
SERIALIZED = "wgmma.mma_async instructions are serialized"
#: a thread's f32 accumulators of a 128xBN tile over 2 warpgroups are BN / 2; the rest of
#: the budget (addresses, loop state, the epilogue's values) is what ptxas used at the
#: ops tiles, 204 for BN = 256 and at most 173 for BN = 128 with an epilogue, plus slack
REGISTER_BUDGET = {256: 208, 128: 180}
UNCHECKED = re.compile(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16;")
CLAMPED = re.compile(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;")


def _blocks(ptx: str) -> list[str]:
    """The PTX's basic blocks: split at labels and after branches."""
    return [b for b in re.split(r"\n\$L__BB\d+_\d+:|(?<=;)\n(?=\s*@?%?p?\d*\s*bra)", ptx) if b.strip()]


def _check_ring(ptx: str, stages: int, chunks: tuple[int, int]) -> None:
    """The ring's copies: per fill (``stages - 2`` ahead of the loop, one a trip) of each
    operand one block of ``chunks`` unchecked cp.async without a compare, select, min or
    max among them, and for edge tiles a loop of clamped cp.async (LLVM unrolls it by 2
    with a remainder: 3 copies, not a clamp a chunk)."""
    interior = [b for b in _blocks(ptx) if UNCHECKED.search(b)]
    fills = stages - 1
    assert sorted(len(UNCHECKED.findall(b)) for b in interior) == sorted(chunks * fills)
    for block in interior:
        assert not re.search(r"\b(setp|selp|min|max)\.", block), block
    assert 2 * fills <= len(CLAMPED.findall(ptx)) <= 3 * 2 * fills < sum(chunks) * fills
    assert ptx.count('.pragma "nounroll";') >= 2 * fills


def _resources(ptx: str, tmp_path) -> int:
    report = ptxas_report(ptx, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    assert SERIALIZED not in report, report
    return int(re.search(r"Used (\d+) registers", report).group(1))


def test_wgmma_gemm_ptx(tmp_path):
    """matmul_kernel at the sm90 ops tile 128x256x64: 8 warps (2 warpgroups), a ring of
    swizzled stages the size of the shared memory allows, BK / 16 = 4 wgmma m64n256k16
    (the floor a K step, all in the loop), one interior copy block a fill of 4 (A: 128 x 64
    over 256 threads, 16 bytes each) and 8 (B: 64 x 256) chunks; ptxas sm_90a: no
    serialization, no spill, registers in budget."""
    tile = configs.gemm_tiles("sm90", "float16")
    assert tile == (128, 256, 64)
    bm, bn, bk = tile
    k = xd.compile(matmul_kernel, GEMM_SIG, {"BM": bm, "BN": bn, "BK": bk}, target="sm90")
    assert k.threads == 256 and k.ptx_arch == SM90.wgmma_ptx_arch == "sm_90a"
    stages = (k.smem_bytes - ALIGN_PAD) // stage_bytes(bm, bn, bk)
    assert k.smem_bytes == stages * stage_bytes(bm, bn, bk) + ALIGN_PAD and stages >= 3
    assert k.smem_bytes <= SM90.smem_per_block < (stages + 1) * stage_bytes(bm, bn, bk) + ALIGN_PAD
    ptx = k.ptx
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16", ptx)) == bk // 16
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "ldmatrix" not in ptx and "mma.sync" not in ptx
    chunks = (bm * bk // 8 // k.threads, bk * bn // 8 // k.threads)
    _check_ring(ptx, stages, chunks)
    assert _resources(ptx, tmp_path) <= REGISTER_BUDGET[bn]


@pytest.mark.parametrize("bias,act,out", [(False, None, "f16"), (True, "gelu_tanh", "bf16")])
def test_ops_matmul_tiles_on_sm90(bias, act, out, tmp_path):
    """ops.matmul's sm90 programs as it launches them: without an epilogue the 128x256x64
    tile and a 16-bit C converted straight from the accumulators (ptxas serialized the
    loop's wgmma for that until the drain passed them through an exact add); with a bias
    row and the tanh gelu, the epilogue tile 128x128x64 and 8 warps: no spill (at 128x256
    it spilled 60-190 bytes)."""
    dtype = {"f16": ("float16", "f16", xt.float16), "bf16": ("bfloat16", "bf16", xt.bfloat16)}[out]
    epilogue = bias or act is not None
    bm, bn, bk = configs.gemm_tiles("sm90", dtype[0], 4096, epilogue=epilogue)
    assert (bm, bn, bk) == ((128, 128, 64) if epilogue else (128, 256, 64))
    sig = {"a": f"{dtype[1]}[:,:]", "b": f"{dtype[1]}[:,:]", "bias": "f32[:,:]", "c": f"{dtype[1]}[:,:]", "K": "i32"}
    consts = {"TA": False, "TB": False, "HAS_BIAS": bias, "ACT": ACTIVATIONS[act], "ACC": xt.float32,
              "OUT": dtype[2], "BM": bm, "BN": bn, "BK": bk}
    k = xd.compile(ops_kernel, sig, consts, target="sm90", **configs.gemm_launch_options("sm90", act))
    assert k.threads == 256
    assert len(re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{bn}k16", k.ptx)) == bk // 16
    assert _resources(k.ptx, tmp_path) <= REGISTER_BUDGET[bn]


@pytest.mark.parametrize("tile", dict(SM90.ops_tiles().gemm_skinny)["float16"])
def test_skinny_tiles_on_sm90(tile, tmp_path):
    """The tiles a skinny ops.matmul takes on sm90 (few programs at 128x256x64: M or N of
    a few hundred) stay on the wgmma path: BM / 16 warps, BK / 16 wgmma m64nBNk16 a K
    step, no spill, registers within the 128x128 budget; and ops.matmul picks them by the
    programs they give against the multiprocessors (``configs.SKINNY_WAVE``)."""
    bm, bn, bk = tile
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "f16[:,:]", "K": "i32"}
    consts = {"TA": False, "TB": False, "HAS_BIAS": False, "ACT": 0, "ACC": xt.float32, "OUT": xt.float16,
              "BM": bm, "BN": bn, "BK": bk}
    k = xd.compile(ops_kernel, sig, consts, target="sm90")
    assert k.threads == bm // 16 * 32
    assert len(re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{bn}k16", k.ptx)) == bk // 16
    assert "mma.sync" not in k.ptx
    assert _resources(k.ptx, tmp_path) <= REGISTER_BUDGET[128]
    # the programs of the tile ops.matmul picks for some (M, N): at least 3/4 of the SMs
    # where any skinny tile gives that many, and never fewer than the table tile gives
    enough = configs.SKINNY_WAVE * SM90.sm_count
    programs = lambda t, m, n: -(-m // t[0]) * -(-n // t[1])  # noqa: E731
    for m, n in ((1, 4096), (128, 4096), (256, 4096), (512, 4096), (1024, 4096), (128, 28672), (8192, 128)):
        chosen = configs.gemm_tiles("sm90", "float16", m, n=n)
        assert programs(chosen, m, n) >= min(enough, programs((64, 64, 64), m, n))
        assert programs(chosen, m, n) >= programs((128, 256, 64), m, n)
        if programs((128, 256, 64), m, n) >= enough:
            assert chosen == (128, 256, 64)


@pytest.mark.parametrize("target", ["sm90", "sm80"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32"])
def test_int8_and_tf32_matmul_on_mma_sync(target, dtype, tmp_path):
    """ops.matmul's int8/uint8 (s32 out) and f32 (tf32) programs: mma.sync m16n8k16
    s8/u8 with s32 accumulators, one a 16-deep K step and 16 x 8 block of C, or two
    m16n8k8 tf32 (inputs rounded by cvt.rna.tf32.f32); the target's tile and 8 warps, no
    spill (ptxas).  On the H200 ``benchmarks/nv_ops_check.py matmul`` found the integer
    products exact and tf32's error 2.9e-04."""
    from xetile_dsl.targets.nvidia import nv_target
    short, acc = {"int8": ("i8", "i32"), "uint8": ("u8", "i32"), "float32": ("f32", "f32")}[dtype]
    bm, bn, bk = configs.gemm_tiles(target, dtype, 4096, n=4096)
    options = configs.gemm_launch_options(target, None, dtype_name=dtype)
    assert options == {"num_warps": 8}
    sig = {"a": f"{short}[:,:]", "b": f"{short}[:,:]", "bias": "f32[:,:]", "c": f"{acc}[:,:]", "K": "i32"}
    xacc = xt.int32 if acc == "i32" else xt.float32
    consts = {"TA": False, "TB": False, "HAS_BIAS": False, "ACT": 0, "ACC": xacc, "OUT": xacc,
              "BM": bm, "BN": bn, "BK": bk}
    k = xd.compile(ops_kernel, sig, consts, target=target, **options)
    assert k.threads == 256
    per_warp_blocks = (bm * bn) // (16 * 8) // 8       # 16 x 8 blocks of C a warp
    if dtype == "float32":
        found = re.findall(r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32", k.ptx)
        assert len(found) == per_warp_blocks * 2 * (bk // 16) and "cvt.rna.tf32.f32" in k.ptx
    else:
        kind = "u8" if dtype == "uint8" else "s8"
        found = re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.s32\.{kind}\.{kind}\.s32", k.ptx)
        assert len(found) == per_warp_blocks * (bk // 16)
    assert "wgmma" not in k.ptx
    report = ptxas_report(k.ptx, k.ptx_arch or nv_target(target).ptx_arch, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
