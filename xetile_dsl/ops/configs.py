"""Which compile target an op runs for, and its tile configuration there.

The tables are tuning choices, not hardware facts: tiles that compile without spills
for each target (checked with ``ocloc`` through ``report()``, see
``benchmarks/vs_onednn.py``) and that the tests cover.  The CPU device runs the GPU
kernel of its flavour, so ``cpu-pvc``/``cpu-arc`` use the ``pvc``/``arc`` rows, and the
interpreter the ``pvc`` rows.  A target without a row of its own (a new GPU) uses the
``pvc`` row until one is measured."""
from __future__ import annotations

from ..dtypes import OF_NUMPY_NAME
from ..errors import UsageError
from ..interpreter import interpret_requested
from ..jit import default_target
from ..runtime.devices import get_device
from ..targets import get_target

#: GEMM tiles (BM, BN, BK) per target family and input dtype; int8 steps K by 64 (one
#: DPAS eats 32 int8 values of K), tf32 by 32 (8 per DPAS; BK = 16 hits a known
#: PVC-flavour loop bug, tests/e2e/test_mma_types.py)
GEMM_TILES = {
    "pvc": {"float16": (32, 32, 32), "bfloat16": (32, 32, 32), "int8": (32, 32, 64), "uint8": (32, 32, 64),
            "float32": (32, 32, 32)},
    "arc": {"float16": (16, 16, 32), "bfloat16": (16, 16, 32), "int8": (16, 16, 32), "uint8": (16, 16, 32)},
}

#: row-wise ops (softmax, norms): (rows per program BM, columns per chunk BC); a row is
#: read in chunks of BC columns, so any width works with one compiled kernel
ROW_TILES = {"pvc": (4, 256), "arc": (2, 256)}

#: flash attention per head dim: (queries per program BM, keys per step BN); BN is the K
#: of the P V product, a multiple of the DPAS K (16 for f16/bf16).  pvc and bmg (ocloc,
#: report(), causal f16): D = 64 runs 64 keys per step (the per-step O^T rescale and loop
#: overhead spread over twice the DPAS: 12.95 hot-loop instructions per DPAS against 14.41
#: at 16 x 32; 32 x 32 spills 2.7 KB); D = 128 keeps 32 (16 x 48 and 16 x 64 measure 13.9
#: and 15.0 per DPAS, 16 x 64 spilling 1.6 KB).  ARC (dg2-g10,
#: 256 GRF): D = 64 spills 13.1 KB at (16, 32), 4.1 KB at (8, 32), none at (8, 16);
#: D = 128 spills at every legal size (15.5 KB at (8, 16), the least), so it runs slowly
ATTENTION_TILES = {"pvc": {64: (16, 64), 128: (16, 32)}, "arc": {64: (8, 16), 128: (8, 16)}}
#: attention tiles on the CPU device (pvc flavour), a functional check that is not timed:
#: its OpenCL compiler builds the step's unrolled code, so the 16 x 16 kernel builds in
#: about 30 s where 16 x 32 took 75 s and 16 x 64 about twice that (which kept the test
#: suite past its 20 minutes); the interpreter still runs the pvc tiles, and the ISA tests
#: compile them
CPU_ATTENTION_TILES = {64: (16, 16), 128: (16, 16)}
#: ops.attention's kernel form: "transposed" (keys x queries: reductions inside each lane,
#: Q^T / V^T / O^T through order=(0, 1) tiles, i.e. transposed 2D block messages) where
#: the target has them; "rows" on ARC, whose transposed tiles would be per-element gathers
#: (measured with ocloc, dg2-g10, D = 64: the transposed form spilled 320 B and gathered).
#: The transposed form's tiles need BN a multiple of BM (one masked block per program).
ATTENTION_FORM = {"pvc": "transposed", "arc": "rows"}

INTERPRETERS = ("interpret", "interpret-subgroups")

#: the targets' element type names of the ops' numpy dtype names
def resolve_target(target: str | None) -> str:
    """The launch target: ``target`` itself, else the interpreter when XETILE_INTERPRET
    asks for it, else the default device's target (``cpu-pvc`` on the CPU device)."""
    if target is not None:
        return target
    if interpret_requested():
        return "interpret"
    return default_target(get_device())


def family(target: str) -> str:
    """The table row of ``target``: ``pvc``, ``arc`` (``cpu-`` stripped; interpreter: pvc)."""
    if target in INTERPRETERS:
        return "pvc"
    name = target.removeprefix("cpu-")
    return name if name in GEMM_TILES else "pvc"


def gemm_tiles(target: str, dtype_name: str, m: int | None = None, trans_a: bool = False) -> tuple[int, int, int]:
    """(BM, BN, BK) of a ``dtype_name`` GEMM on ``target``; with ``m`` (A's rows) smaller
    than the table's BM, BM is the smallest DPAS repeat count (rows of A per DPAS, a
    target fact) or multiple of the largest that holds them, so M = 1, 2 or 4 spends no
    DPAS work on padding rows and M = 9 .. 16 runs 16-row tiles
    (a transposed A keeps the table's BM: its transposed reads need 8-row blocks)."""
    row = GEMM_TILES[family(target)]
    if dtype_name not in row:
        raise UsageError(f"matmul: {dtype_name} inputs are not supported on {target}; supported: "
                         f"{', '.join(sorted(row))}" + ("" if family(target) == "pvc" else
                                                         " (float32 = tf32 DPAS exists on PVC only)"))
    bm, bn, bk = row[dtype_name]
    if m is not None and m < bm and not trans_a:
        short = OF_NUMPY_NAME[dtype_name].name
        repeat_counts = get_target(family(target)).dpas_for(short, short).m_values
        whole_blocks = range(max(repeat_counts), bm, max(repeat_counts))  # 8, 16, .. below bm
        bm = min(r for r in (*repeat_counts, *whole_blocks, bm) if r >= m)
    return bm, bn, bk


def row_tiles(target: str) -> tuple[int, int]:
    return ROW_TILES[family(target)]


def attention_tiles(target: str, head_dim: int) -> tuple[int, int]:
    if target == "cpu-pvc":
        return CPU_ATTENTION_TILES[head_dim]
    return ATTENTION_TILES[family(target)][head_dim]


def attention_form(target: str) -> str:
    return ATTENTION_FORM[family(target)]
