"""ARC (dg2-g10) GEMM loads that keep DPAS fed, read from Intel's offline
compiler: on ARC a row-major A.B K loop computes C^T = B^T.A^T (lowering/passes/wg_to_sg/operand_swap.py),
so both operands are read through transposed views whose lanes each hold whole runs of
a memory row, and each run is one per-lane vector load (codegen/builtins/transposed_loads.py
``_lane_rows``): ``load.ugm.d32x8``, 256 bytes for the 8 lanes, the largest message IGC
emits on DG2 (docs/decisions/016-transposes.md).  Operand B (A^T): one message per 8 rows x
16 K of A; operand A (B^T): rows 2n and 2n + 1 of B for lane n, 16 columns each, one
message per row parity for two DPAS blocks.  The cold per-lane loop that serves blocks
leaving the array keeps one ``d16u32`` gather per block in the code.

Before (row block reads): ARC_TILES 64 block reads + 24 gathers per 32 DPAS (2.75 per
DPAS in the code, 2.0 on the in-bounds path), 3225 hot-loop instructions; the RFC 2.1
literal program 4 K-loop copies of 16 block reads + 260 gathers per 16 DPAS (17.25).
Only loads of a plain GEMM step are read this way (``xetile.lane_rows``): ARC attention's
K^T next to its softmax keeps per-element loads (lane rows there spilled 2304 B).
Static counts, deterministic under the pinned IGC (tools-cache)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.gemm_wg import ARC_TILES, gemm_prefetch_kernel, gemm_wg_configs, gemm_wg_kernel
from xetile_dsl.tools import ocloc
from xetile_dsl.tools.isa import instructions

SIG = {"a": "{t}[:,:]", "b": "{t}[:,:]", "c": "f32[:,:]", "K": "i32"}
#: a DPAS that IGC adds with a null accumulator source (not one of the kernel's)
_DUMMY_DPAS = re.compile(r"\bdpas\.\S+\s+\(\S+\)\s+\S+\s+null")


def _k_loops(isa: str) -> list[str]:
    """The outermost loops that hold DPAS (the K loop and any copies of it)."""
    return [loop for loop in ocloc.loops(isa) if ocloc.count(loop, ocloc.DPAS)]


def _loop_counts(loop: str) -> tuple[int, dict[str, int]]:
    """(the kernel's DPAS, memory messages by IGA message name without cache suffixes)."""
    dpas = sum(1 for line in loop.splitlines() if re.search(ocloc.DPAS, line) and not _DUMMY_DPAS.search(line))
    sends: dict[str, int] = {}
    for ins in instructions(loop):
        if ins.opcode.startswith("send"):
            name = ".".join(ins.message.split(".")[:3])
            sends[name] = sends.get(name, 0) + 1
    return dpas, sends


def _compile(kernel, elem: str, consts: dict):
    sig = {k: v.format(t=elem) for k, v in SIG.items()}
    return xd.compile(kernel, sig, consts, target="arc")


@pytest.fixture(scope="module", params=["f16", "bf16"])
def arc_tiles(request):
    return _compile(gemm_wg_kernel, request.param, {**ARC_TILES, "ACC": xt.float32})


def test_arc_tiles_gemm_sends_at_most_one_message_per_dpas(arc_tiles, ocloc_path):
    """ARC_TILES (128x128 over [4, 4], 32x32 per subgroup, BK 32): one K loop, 0 spill, 32
    DPAS per K step fed by 16 ``d32x8`` loads (8 for A^T: 4 row blocks x 2 K blocks; 8
    for B^T: 2 column pairs x 2 row parities x 2 K blocks) -- 0.5 per DPAS in bounds --
    plus 12 cold-loop gathers (one per coalesced block): 28 messages, at most 1 per DPAS
    in the code.  No subgroup block reads left."""
    isa = arc_tiles.asm["isa"]
    env = arc_tiles.asm["zebin"].execution_env("gemm_wg_kernel")
    assert env.get("spill_size", 0) == 0 and env["grf_count"] == 256
    (loop,) = _k_loops(isa)  # one K loop: no copies re-reading B
    dpas, sends = _loop_counts(loop)
    print(f"arc ARC_TILES: {dpas} dpas, sends {sends}, {len(loop.splitlines())} lines")
    assert dpas == 32
    assert sends.get("load.ugm.d32x8", 0) == 16
    assert sends.get("load.ugm.d16u32", 0) <= 12
    assert sum(sends.values()) <= dpas  # <= 1 send per DPAS (before: 88 for 32)
    assert not any(name.endswith("t") for name in sends)  # no transposed (subgroup block) reads


def test_arc_second_config_reads_lane_rows_without_spills(ocloc_path):
    """The other ARC tile (64x64 over [4, 2], 16x32 pieces): one K loop, 0 spill, 16 DPAS
    per K step from 12 ``d32x8`` loads (0.75 per DPAS in bounds; before 3.0)."""
    cfg = gemm_wg_configs("arc", "f16")[1].kwargs
    kernel = _compile(gemm_wg_kernel, "f16", {**cfg, "ACC": xt.float32})
    assert kernel.asm["zebin"].execution_env("gemm_wg_kernel").get("spill_size", 0) == 0
    (loop,) = _k_loops(kernel.asm["isa"])
    dpas, sends = _loop_counts(loop)
    assert dpas == 16
    assert sends.get("load.ugm.d32x8", 0) == 12 and sum(sends.values()) <= 20


def test_rfc_2_1_literal_on_arc_at_most_one_and_a_half_sends_per_dpas(ocloc_path):
    """The 256x256 RFC 2.1 program (32x64 f32 per subgroup: ARC's whole register file)
    runs its K loop in 2 copies of 32x32 accumulators (before: 4 of 32x16), each 0 spill
    and 32 DPAS fed as ARC_TILES' loop is: 16 ``d32x8`` + 12 cold-loop gathers, 0.875 per
    DPAS (before 17.25; 1.25 with B^T's blocks not coalesced in the split loop: 16
    ``d32x4`` in place of 8 ``d32x8``).  Each copy's C^T is stored before the next copy
    runs (split_accumulators moves the scattered stores too), else copy 0's accumulator
    spilled 4480 B."""
    kernel = _compile(gemm_prefetch_kernel, "f16", {"BM": 256, "BN": 256, "BK": 32, "PF": 3})
    assert kernel.asm["zebin"].execution_env("gemm_prefetch_kernel").get("spill_size", 0) == 0
    loops = _k_loops(kernel.asm["isa"])
    assert len(loops) == 2
    for loop in loops:
        dpas, sends = _loop_counts(loop)
        print(f"arc RFC 2.1 copy: {dpas} dpas, sends {sends}")
        assert dpas == 32
        assert sends.get("load.ugm.d32x8", 0) == 16
        assert sum(sends.values()) <= dpas  # goal: <= 1.5 per DPAS
