"""Which compile target an op runs for, and its tile configuration there.

The tiles are each target's ``Target.ops_tiles()`` (targets/target.py): tuning choices,
not hardware facts, declared by a target that measured them (pvc, arc; the Xe2 targets
keep PVC's), else derived from its own DPAS and block facts (``OpTiles.rule_for``).  The
CPU device runs the GPU kernel of its flavour, so ``cpu-pvc``/``cpu-arc`` use the
``pvc``/``arc`` tiles, and the interpreter the ``pvc`` ones."""
from __future__ import annotations

import functools
from typing import NamedTuple

from ..dtypes import OF_NUMPY_NAME
from ..errors import LaunchError, UsageError
from ..interpreter import INTERPRETER_TARGETS, interpret_requested
from ..jit import default_target
from ..runtime.devices import get_device
from ..runtime import backend_cuda
from ..targets import TARGETS, Target, compile_target
from ..targets.nvidia import DEFAULT_NV_TARGET, NV_TARGETS, for_compute_capability

#: attention tiles on the CPU device (pvc flavour), a functional check that is not timed:
#: its OpenCL compiler builds the step's unrolled code, so the 16 x 16 kernel builds in
#: about 30 s where 16 x 32 took 75 s and 16 x 64 about twice that (which kept the test
#: suite past its 20 minutes); the interpreter still runs the pvc tiles, and the ISA tests
#: compile them
CPU_ATTENTION_TILES = {32: (16, 16), 64: (16, 16), 128: (16, 16)}
#: attention backward tiles on the CPU device where pvc's are larger than the DPAS's
#: smallest blocks (16 queries, 8 keys, 16-key dq steps), for the same reason
CPU_ATTENTION_BACKWARD_TILES = {32: (16, 8, 16)}

#: the targets' element type names of the ops' numpy dtype names
def resolve_target(target: str | None, like=None) -> str:
    """The launch target: ``target`` itself, else the NVIDIA target of the GPU when
    ``like`` (the op's first array) is a CUDA array (a torch CUDA tensor), else the
    interpreter when XETILE_INTERPRET asks for it, else the default device's target
    (``cpu-pvc`` on the CPU device)."""
    if target is not None:
        return target
    if like is not None and backend_cuda.is_cuda_array(like):
        try:
            return for_compute_capability(*backend_cuda.compute_capability()).name
        except LaunchError:     # no driver to ask (the launch then says so)
            return DEFAULT_NV_TARGET
    if interpret_requested():
        return "interpret"
    return default_target(get_device())


def is_nvidia(target: str) -> bool:
    """Whether ``target`` names an NVIDIA compile target (``sm90``, ``sm80``)."""
    return target in NV_TARGETS


def gpu_of(target: str) -> Target:
    """The GPU target whose tiles ``target`` uses (``cpu-`` flavours: their GPU's;
    the interpreter: its flavour's; an NVIDIA target: itself)."""
    if target in NV_TARGETS:
        return NV_TARGETS[target]
    return compile_target("interpret" if target in INTERPRETER_TARGETS else target).gpu


#: the share of a GPU's multiprocessors a skinny GEMM's programs must reach before a larger
#: tile is kept (``OpTiles.gemm_skinny``): on the H200 (132) 112 programs of 128x256x64
#: (M 128, N 28672) beat 224 of 128x128x64, and 64 (M 512, N 4096) lost to 128 of 128x128x64
#: by 1.44x in kernel time (benchmarks/gemm_split_cuda.py --shapes)
SKINNY_WAVE = 0.75


def gemm_tiles(target: str, dtype_name: str, m: int | None = None, trans_a: bool = False,
               epilogue: bool = False, n: int | None = None) -> tuple[int, int, int]:
    """(BM, BN, BK) of a ``dtype_name`` GEMM on ``target``; with ``m`` (A's rows) smaller
    than the table's BM, BM is the smallest DPAS repeat count (rows of A per DPAS, a
    target fact) or multiple of the largest that holds them, so M = 1, 2 or 4 spends no
    DPAS work on padding rows and M = 9 .. 16 runs 16-row tiles
    (a transposed A keeps the table's BM: its transposed reads need whole blocks of the
    largest repeat count).  ``epilogue``: the program fuses a bias row or an activation
    (the target's ``OpTiles.gemm_epilogue`` tile where it names one).  With ``m`` and
    ``n`` (C's columns) and no epilogue, a target's ``OpTiles.gemm_skinny`` tiles replace
    one that would give fewer programs than ``SKINNY_WAVE`` of its multiprocessors.

    >>> gemm_tiles("sm90", "float16"), gemm_tiles("sm90", "float16", epilogue=True)
    ((128, 256, 64), (128, 128, 64))
    >>> [gemm_tiles("sm90", "float16", m, n=4096) for m in (16, 256, 512, 1024)]
    [(64, 64, 64), (64, 128, 64), (128, 128, 64), (128, 256, 64)]
    """
    gpu = gpu_of(target)
    row = dict(gpu.ops_tiles().gemm)
    if dtype_name not in row:
        tf32 = [name for name, t in TARGETS.items() if t.dpas_for("tf32", "tf32") is not None]
        raise UsageError(f"matmul: {dtype_name} inputs are not supported on {target}; supported: "
                         f"{', '.join(sorted(row))}" + ("" if "float32" in row else
                                                         f" (float32 = tf32 DPAS exists on {', '.join(tf32)} only)"))
    bm, bn, bk = dict(gpu.ops_tiles().gemm_epilogue).get(dtype_name, row[dtype_name]) if epilogue else row[dtype_name]
    skinny = dict(gpu.ops_tiles().gemm_skinny).get(dtype_name, ()) if not (epilogue or trans_a) else ()
    if skinny and m and n:
        enough = SKINNY_WAVE * (getattr(gpu, "sm_count", 0) or gpu.xe_cores)
        programs = lambda t: -(-m // t[0]) * -(-n // t[1])  # noqa: E731
        if programs((bm, bn, bk)) < enough:
            bm, bn, bk = next((t for t in skinny if programs(t) >= enough), skinny[-1])
    if m is not None and m < bm and not trans_a and target not in NV_TARGETS:
        short = OF_NUMPY_NAME[dtype_name].name
        repeat_counts = gpu.dpas_for(short, short).m_values
        whole_blocks = range(max(repeat_counts), bm, max(repeat_counts))  # 8, 16, .. below bm
        bm = min(r for r in (*repeat_counts, *whole_blocks, bm) if r >= m)
    return bm, bn, bk


def gemm_launch_options(target: str, activation: str | None, fp8: bool = False, dtype_name: str = "") -> dict:
    """The launch options of an ``ops.matmul`` program on ``target``: ``num_warps`` where
    the target's ops tiles ask for a count with a transcendental activation fused, for
    an ``fp8`` tile (``fp8``), or for inputs of ``dtype_name`` (``OpTiles.gemm_dtype_warps``).

    >>> gemm_launch_options("sm90", "gelu"), gemm_launch_options("sm90", None), gemm_launch_options("sm90", None, True)
    ({'num_warps': 8}, {}, {'num_warps': 8})
    """
    if fp8 and gpu_of(target).ops_tiles().gemm_fp8_warps:
        return {"num_warps": gpu_of(target).ops_tiles().gemm_fp8_warps}
    if dtype_name in dict(gpu_of(target).ops_tiles().gemm_dtype_warps):
        return {"num_warps": dict(gpu_of(target).ops_tiles().gemm_dtype_warps)[dtype_name]}
    warps = gpu_of(target).ops_tiles().gemm_activation_warps
    return {"num_warps": warps} if warps and activation in ("gelu", "gelu_tanh", "silu") else {}

def gemm_group(target: str) -> dict:
    """``ops.matmul``'s grouped program order on ``target`` (``OpTiles.gemm_group_m`` row
    blocks a group) as the kernel's ``GM`` constant; {} where it is 1 (the plain grid).

    >>> gemm_group("sm90"), gemm_group("pvc")
    ({'GM': 8}, {})
    """
    group = gpu_of(target).ops_tiles().gemm_group_m
    return {"GM": group} if group > 1 else {}


def wq_tiles(target: str, m: int) -> tuple[int, int]:
    """(BM, BN) of ``ops.matmul_wq`` on ``target`` for ``m`` rows of x: the target's
    ``OpTiles.weight_quant``, BM cut to the smallest DPAS repeat count (or multiple of the
    largest) holding ``m`` rows, as :func:`gemm_tiles` does (M = 1 runs 1-row DPAS)."""
    gpu = gpu_of(target)
    bm, bn = gpu.ops_tiles().weight_quant
    if target in NV_TARGETS:    # mma.sync's 16 rows: the fewest 16-row blocks holding m
        return min(bm, -(-m // 16) * 16), bn
    if m < bm:
        repeat_counts = gpu.dpas_for("f16", "f16").m_values
        whole_blocks = range(max(repeat_counts), bm, max(repeat_counts))
        bm = min(r for r in (*repeat_counts, *whole_blocks, bm) if r >= m)
    return bm, bn


def row_tiles(target: str) -> tuple[int, int]:
    return gpu_of(target).ops_tiles().rows


class WholeRows(NamedTuple):
    """The whole-row form of softmax and the norms: BM rows of BN columns a program (BN
    the power of two >= N, at least 32), over ``num_warps`` warps."""
    bm: int
    bn: int
    num_warps: int


@functools.lru_cache(maxsize=256)
def whole_row_tiles(target: str, n: int) -> WholeRows | None:
    """The whole-row form's tiles for rows of ``n`` columns on ``target``, or None where
    it takes the chunked form (``n`` past the target's ``rows_whole_max``, or a target
    without the form): ``BN / (32 x per_thread)`` warps (1 .. the target's most), and
    where one warp is too many, rows enough for ``per_thread`` elements a lane.

    >>> whole_row_tiles("sm90", 8192), whole_row_tiles("sm90", 1000), whole_row_tiles("sm90", 100)
    (WholeRows(bm=1, bn=8192, num_warps=8), WholeRows(bm=1, bn=1024, num_warps=1), WholeRows(bm=8, bn=128, num_warps=1))
    >>> whole_row_tiles("pvc", 8192) is None
    True
    """
    tiles = gpu_of(target).ops_tiles()
    if n > tiles.rows_whole_max:
        return None
    bn = max(32, 1 << (n - 1).bit_length())
    per_warp = 32 * tiles.rows_whole_per_thread
    warps = max(1, min(tiles.rows_whole_max_warps, bn // per_warp))
    return WholeRows(max(1, per_warp // bn), bn, warps)


#: the norms' backward chunk (BC) where the rows tiles' spill (ocloc, f16, f32 weights):
#: its second pass keeps x, dy, w, xhat, their products and both partial tiles live,
#: several times the forward's footprint; on ARC (BM = 2, 8 KiB of registers per
#: subgroup) BC = 256 spills 14560 bytes, 128 spills 864, 64 none
NORM_BACKWARD_CHUNK = {"arc": 64}


def norm_backward_tiles(target: str) -> tuple[int, int]:
    """(BM, BC) of the norms' backward kernel: the row tiles, with a chunk small enough
    not to spill (:data:`NORM_BACKWARD_CHUNK`)."""
    bm, bc = row_tiles(target)
    return bm, NORM_BACKWARD_CHUNK.get(gpu_of(target).name, bc)


def attention_tiles(target: str, head_dim: int) -> tuple[int, int]:
    if target == "cpu-pvc":
        return CPU_ATTENTION_TILES[head_dim]
    return dict(gpu_of(target).ops_tiles().attention)[head_dim]


def attention_backward_tiles(target: str, head_dim: int) -> tuple[int, int, int]:
    """(BM, BN, BK) of ops.attention_backward: queries per dk/dv step and per dq program,
    keys per dk/dv program, keys per dq step (``OpTiles.attention_backward``; cpu-pvc
    runs the pvc ones, or the DPAS's smallest blocks where those are larger:
    :data:`CPU_ATTENTION_BACKWARD_TILES`)."""
    if target == "cpu-pvc" and head_dim in CPU_ATTENTION_BACKWARD_TILES:
        return CPU_ATTENTION_BACKWARD_TILES[head_dim]
    return dict(gpu_of(target).ops_tiles().attention_backward)[head_dim]


def attention_backward_dq_queries(target: str, head_dim: int) -> int:
    """Queries per dq program of ops.attention_backward: the rows form's own
    (``OpTiles.attention_backward_dq_queries``), else BM.

    >>> attention_backward_dq_queries("arc", 64), attention_backward_dq_queries("pvc", 64)
    (8, 16)
    """
    own = dict(gpu_of(target).ops_tiles().attention_backward_dq_queries)
    return own.get(head_dim) or attention_backward_tiles(target, head_dim)[0]


def attention_vnni_tiles(target: str, head_dim: int) -> tuple[int, int] | None:
    """(BM, BN) of ops.attention's V-as-operand-B form (attention.attention_vnni_kernel) at
    ``head_dim`` on ``target``, None where the target's form runs (OpTiles.attention_vnni).

    >>> attention_vnni_tiles("bmg", 128), attention_vnni_tiles("pvc", 128)
    ((16, 64), None)
    """
    if target == "cpu-pvc":
        return None
    return dict(gpu_of(target).ops_tiles().attention_vnni).get(head_dim)


def attention_form(target: str) -> str:
    return gpu_of(target).ops_tiles().attention_form


def attention_split(target: str) -> bool:
    """Whether ops.attention's rows form runs its unmasked key blocks in a loop of their
    own on ``target`` (``OpTiles.attention_split``).

    >>> attention_split("sm90"), attention_split("sm80"), attention_split("arc")
    (True, False, False)
    """
    return gpu_of(target).ops_tiles().attention_split


class DecodeTiles(NamedTuple):
    """ops.decode_attention's choices on one target (OpTiles.decode_*)."""
    mma_group: int        # the smallest query-head group on DPAS
    max_rows: int         # the most query heads per program
    keys_per_step: int    # keys per step of a block walk
    min_split_keys: int   # the fewest keys per split of the context


def decode_tiles(target: str, head_dim: int) -> DecodeTiles:
    tiles = gpu_of(target).ops_tiles()
    return DecodeTiles(tiles.decode_mma_group, tiles.decode_max_rows, dict(tiles.decode_keys_per_step)[head_dim],
                       tiles.decode_min_split_keys)


def decode_group_rows(target: str, dtype_name: str, group: int) -> int:
    """Rows of ops.decode_attention's Q tile for ``group`` query heads on DPAS: a multiple
    of the largest DPAS repeat count (8 on PVC and ARC), since the scores feed the P V
    product as operand A, whose blocks are re-laid out only from whole result blocks
    (lowering/rewrites/mma_relayout.py); the padding heads are computed, not stored."""
    short = OF_NUMPY_NAME[dtype_name].name
    gpu = gpu_of(target)
    top = 16 if target in NV_TARGETS else max(gpu.dpas_for(short, short).m_values)   # mma.sync: m16
    return -(-group // top) * top
