"""NVIDIA GPU targets: the hardware facts the NVPTX branch of the compiler asks
(``codegen/nvptx``).  They are a table of their own, beside the Intel one of
:mod:`.target`: an NVIDIA GPU has no DPAS, 2D block messages or GRF modes, and the
Intel passes after the workgroup-to-subgroup distribution never see these entries.

Facts come from NVIDIA's PTX ISA (``mma.sync``/``wgmma`` shapes and fragment layouts,
``shfl.sync``), the CUDA C++ Programming Guide's table of compute capabilities (warp
size, registers, shared memory per block) and the Hopper tuning guide (warpgroups, TMA).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UsageError
from .target import OpTiles


@dataclass(frozen=True)
class MmaShape:
    """One warp-level ``mma.sync.aligned.mMnNkK`` flavour: ``D[M,N] = A[M,K] B[K,N] + C``
    with A row-major and B column-major fragments (the ``.row.col`` form), one warp."""

    a_type: str
    b_type: str
    acc_type: str
    m: int
    n: int
    k: int

    @property
    def acc_types(self) -> tuple[str, ...]:
        """The accumulator types (the frontend's question of a DPAS flavour too)."""
        return (self.acc_type,)


@dataclass(frozen=True)
class WgmmaShape:
    """One warpgroup ``wgmma.mma_async`` flavour (sm_90a): M = 64, N a multiple of 8 up to
    256, K = 32 bytes of the input type; A from registers or shared memory, B from shared."""

    a_type: str
    acc_type: str
    m: int
    k: int
    n_values: tuple[int, ...]


@dataclass(frozen=True)
class NvTarget:
    """Everything the NVPTX branch may ask about one NVIDIA GPU."""

    name: str                 # the compile-target name: "sm90", "sm80"
    ptx_arch: str             # the PTX ``.target`` / ptxas ``-arch``: "sm_90"
    ptx_features: str         # the NVPTX backend's feature string (PTX ISA version)
    warp_size: int            # lanes of a warp: the subgroup of the XeTile IR
    mma: tuple[MmaShape, ...]
    #: shared memory one block may reserve (opt-in maximum), bytes
    smem_per_block: int
    #: shared memory a block may declare statically (``.shared`` arrays; past it only the
    #: dynamic opt-in reaches): 48 KB on every CUDA architecture (CUDA C++ Programming
    #: Guide, "Technical Specifications per Compute Capability")
    static_smem_per_block: int = 48 * 1024
    #: 32-bit registers per thread (ptxas limit) and per multiprocessor
    regs_per_thread: int = 255
    regs_per_sm: int = 65536
    max_threads_per_block: int = 1024
    #: hardware barriers of a block (PTX ``bar.sync`` ids 0 .. 15; ``bar.sync 0`` is the
    #: program-wide one)
    barriers_per_block: int = 16
    #: warps of a warpgroup (wgmma's unit), 0 where there is no wgmma
    warpgroup_warps: int = 0
    wgmma: tuple[WgmmaShape, ...] = ()
    #: the PTX ``.target`` / ptxas ``-arch`` of code holding wgmma (architecture-specific
    #: features: sm_90a, PTX ISA "Target ISA notes"), "" where there is none
    wgmma_ptx_arch: str = ""
    #: whether the bulk tensor copy engine (``cp.async.bulk.tensor``, TMA) exists
    tma: bool = False
    #: multiprocessors of the reference product
    sm_count: int = 0
    #: TMA's limits (CUDA driver API, cuTensorMapEncodeTiled; PTX ISA, tensor copies): a
    #: box of at most 256 elements a dimension, a global address and row strides that are
    #: multiples of 16 bytes, at most 2^40 bytes a stride; in the 128-byte swizzle the
    #: box's inner extent is at most 128 bytes; the opaque tensor map is 128 bytes, 64-byte
    #: aligned (a kernel parameter of that alignment)
    tma_box_max: int = 256
    #: the most dimensions a tensor map describes
    tma_rank_max: int = 5
    tma_align_bytes: int = 16
    tma_stride_limit: int = 1 << 40
    tma_swizzle_bytes: int = 128
    tma_map_bytes: int = 128
    tma_map_align: int = 64
    #: the shared-memory staged GEMM (``codegen/nvptx/smem_pipeline``): ``cp.async`` copies of
    #: 16 bytes (PTX ISA, cp.async: cp-size 4, 8 or 16; .cg takes 16 only), the shared memory
    #: banks (32 of 4 bytes: an ``ldmatrix`` phase reads 8 rows of 16 bytes, conflict-free
    #: when the row pitch is an odd multiple of 16 bytes), the warps a program may hold, the
    #: accumulator block one warp takes (64x64 f32: 128 registers of the 255; ptxas for
    #: sm_80 spills a few bytes at 64x64 where sm_90's does not, so sm80 takes 64x32), and
    #: the ring depth of the staged copies when the launch names no ``num_stages``
    cp_async_bytes: int = 16
    smem_banks: int = 32
    smem_bank_bytes: int = 4
    max_program_warps: int = 8
    mma_warp_tile: tuple[int, int] = (64, 64)
    smem_stages: int = 3
    #: whether ``cvt.rn.f16x2.e4m3x2`` / ``e5m2x2`` (fp8 to f16) exist: sm_89 and later,
    #: PTX ISA 7.8
    fp8_cvt: bool = False

    @property
    def subgroup_size(self) -> int:
        """The subgroup of the XeTile IR is the warp."""
        return self.warp_size

    @property
    def masked_store_lanes(self) -> int:
        """Any width: a warp's scattered stores take narrow tiles too (every lane holds the
        value; its first copy stores each element)."""
        return 1

    def mma_for(self, a_type: str, b_type: str) -> MmaShape | None:
        """The ``mma.sync`` flavour for these input element types, or None (f32 inputs
        are multiplied by the tf32 flavour)."""
        alias = {"f32": "tf32"}
        a_type, b_type = alias.get(a_type, a_type), alias.get(b_type, b_type)
        return next((s for s in self.mma if s.a_type == a_type and s.b_type == b_type), None)

    #: the frontend asks every target this name for the matrix-engine flavour of tile_mma
    dpas_for = mma_for

    def fp8_mma_input(self, a_type: str, b_type: str) -> str | None:
        """The ``mma.sync`` input type fp8 operands of ``tile_mma`` are converted to in
        registers (the frontend's exact widening; ``fp8_cvt`` converts): f16, or bf16 next to
        a bf16 operand.  (Hopper's fp8 products are wgmma ``m64nNk32`` e4m3/e5m2 with both
        operands K-major in shared memory, and sm_89's ``mma.sync m16n8k32`` e4m3: neither
        is lowered, so fp8 GEMMs run at the f16 rate.)"""
        return "bf16" if "bf16" in (a_type, b_type) else "f16"

    def legal_mma_inputs(self) -> list[str]:
        return sorted({f"{s.a_type}x{s.b_type}" for s in self.mma})

    def row_view_align(self, bits: int) -> int:
        """Elements a 1-D array's ``[1, n]`` view rounds its row pitch up to: 1 (no block
        messages read it on this backend; the Intel targets round to their pitch alignment)."""
        return 1

    @property
    def gpu(self) -> "NvTarget":
        """The target whose ops tiles this one uses (itself; Intel targets name their GPU)."""
        return self

    def ops_tiles(self) -> OpTiles:
        """:meth:`_ops_tiles`, built once a target (every op launch asks)."""
        known = _OPS_TILES.get(id(self))
        if known is None or known[0] is not self:
            known = _OPS_TILES[id(self)] = (self, self._ops_tiles())
        return known[1]

    def _ops_tiles(self) -> OpTiles:
        """The ready-made ops' tiles on this target (tuning choices, benchmarks/vs_cuda.py):
        the GEMM 128x256x64 where wgmma exists (2 warpgroups of 64x256, ``codegen/nvptx/
        wgmma_gemm``), 128x128x64 when it fuses a bias row or an activation (at 128x256 the
        128 accumulators a thread and the epilogue's values spill, ptxas sm_90a); else a
        staged program of ``128 / mma_warp_tile`` warps over 128x128x32 (f16 and bf16, the
        inputs ``mma.sync`` m16n8k16 takes here).  Softmax and the norms take the whole-row
        form up to 8192 columns (one read of x: 16 elements a thread, so 8192 columns run
        16 warps; at 16384, 32 a thread, layer_norm's f32 and bf16 programs spill 4 to 16
        bytes at 16 warps' 128 registers and at 32 warps' 64, ptxas sm_90), the other row
        ops, and longer rows, 4 rows of 256-column chunks, one warp.  A GEMM fusing gelu or silu takes 8 warps (mma.sync: 32x64 of C each; at
        4 the accumulators and the epilogue's temporaries spill, ptxas sm_90).  Flash
        attention runs the untransposed ("rows") form.  Where wgmma exists, the unmasked
        key blocks in a loop of their own and both loops on wgmma
        (``codegen/nvptx/wgmma_attention``): at D = 128, 128 queries a program (2
        warpgroups: Q in shared memory, 253 registers, no spill; ptxas sm_90a) and 128 keys
        a step; at D = 64, 64 queries (1 warpgroup) and 64 keys (the sweep of
        benchmarks/vs_cuda_attention.py: the smaller program beat 128 x 64 there); D = 32
        (below the swizzle's 64 columns) mma.sync.  Else (mma.sync) 64 queries (4 warps of
        16 rows) and 64 keys a step at D <= 64, 32 at D = 128 (64 there: 255 registers
        and a 96-byte stack; ptxas, sm_90).  On wgmma targets the GEMM's programs run in
        groups of 8 row blocks (benchmarks/vs_cuda.py's ``grouped`` rows); a skinny one
        (fewer than 3/4 of the multiprocessors' programs at 128x256: M or N up to about
        512 on an H200 at N = 4096) takes 128x128, 64x128 or 64x64 (the wgmma path's BM 64
        is one warpgroup; benchmarks/gemm_split_cuda.py --shapes).  The attention
        backward's rows form: 16 queries a dk/dv step and 32 keys a dk/dv program (2 warps),
        dq programs of 32 queries (its [D, BM] column tiles take the ``cols`` layout only at
        BM a multiple of 32; at 16 they are replicated in every lane) and 16 keys a step;
        decode attention's query-head rows up to 16 (mma.sync's m16)."""
        tile = (128, 256, 64) if self.wgmma else (128, 128, 32)
        gemm = (("float16", tile), ("bfloat16", tile))
        # 8-bit integers (mma.sync m16n8k16 s8/u8, s32 accumulators) and f32 (as tf32, m16n8k8):
        # the mma.sync program (per-lane loads: the ldmatrix ring takes 16-bit elements only)
        # (8 warps; at the compiler's 4 ptxas spills 320 bytes, and f32 at BK 32 at 8; sm_90a)
        gemm += (("int8", (128, 128, 32)), ("uint8", (128, 128, 32)), ("float32", (128, 128, 16)))
        dtype_warps = (("int8", 8), ("uint8", 8), ("float32", 8))
        if self.fp8_cvt:    # fp8 operands widened to f16 in registers, then mma.sync (fp8_mma_input):
            gemm += (("fp8", (128, 128, 32)),)   # 8 warps of 64 x 32 (at 4 the per-lane fp8 loads spill)
        epilogue = (("float16", (128, 128, 64)), ("bfloat16", (128, 128, 64))) if self.wgmma else ()
        skinny = ((128, 128, 64), (64, 128, 64), (64, 64, 64))
        skinny = (("float16", skinny), ("bfloat16", skinny)) if self.wgmma else ()
        attention = ((32, (64, 64)), (64, (64, 64)), (128, (128, 128))) if self.wgmma else \
            ((32, (64, 64)), (64, (64, 64)), (128, (64, 32)))
        return OpTiles(gemm=gemm, rows=(4, 256), rows_whole_max=8192, attention=attention,
                       attention_form="rows", attention_split=bool(self.wgmma), gemm_activation_warps=8,
                       gemm_fp8_warps=8 if self.fp8_cvt else None,
                       gemm_epilogue=epilogue, gemm_group_m=8 if self.wgmma else 1, gemm_skinny=skinny,
                       gemm_dtype_warps=dtype_warps,
                       decode_max_rows=16,
                       attention_backward=((32, (16, 32, 16)), (64, (16, 32, 16)), (128, (16, 32, 16))),
                       attention_backward_dq_queries=((32, 32), (64, 32), (128, 32)))


#: id(NvTarget) -> (the target, its OpTiles) (:meth:`NvTarget.ops_tiles`)
_OPS_TILES: dict = {}

#: mma.sync shapes of sm_80 and later (PTX ISA, "Matrix shape": m16n8k16 for 16-bit inputs,
#: m16n8k32 for 8-bit integers, m16n8k8 for tf32), each accumulating in f32 or s32
_MMA_SYNC = (
    MmaShape("f16", "f16", "f32", 16, 8, 16),
    MmaShape("bf16", "bf16", "f32", 16, 8, 16),
    MmaShape("i8", "i8", "i32", 16, 8, 32),
    MmaShape("u8", "u8", "i32", 16, 8, 32),
    MmaShape("tf32", "tf32", "f32", 16, 8, 8),
)

#: wgmma shapes (PTX ISA, "Asynchronous Warpgroup Level Matrix Shape"): m64nNk16 for
#: f16/bf16, m64nNk8 for tf32, m64nNk32 for 8-bit integers; N = 8, 16, ..., 256
_N_VALUES = tuple(range(8, 257, 8))
_WGMMA = (
    WgmmaShape("f16", "f32", 64, 16, _N_VALUES), WgmmaShape("bf16", "f32", 64, 16, _N_VALUES),
    WgmmaShape("tf32", "f32", 64, 8, _N_VALUES), WgmmaShape("i8", "i32", 64, 32, _N_VALUES),
)

#: A100: 108 multiprocessors, 164 KB of shared memory per multiprocessor (163 KB a block)
SM80 = NvTarget(name="sm80", ptx_arch="sm_80", ptx_features="+ptx70", warp_size=32, mma=_MMA_SYNC,
                smem_per_block=163 * 1024, sm_count=108, smem_stages=3, mma_warp_tile=(64, 32))

#: H100/H200 SXM: 132 multiprocessors, 228 KB of shared memory per multiprocessor (227 KB
#: a block), warpgroups of 4 warps for wgmma, the TMA copy engine
SM90 = NvTarget(name="sm90", ptx_arch="sm_90", ptx_features="+ptx80", warp_size=32, mma=_MMA_SYNC,
                smem_per_block=227 * 1024, warpgroup_warps=4, wgmma=_WGMMA, wgmma_ptx_arch="sm_90a",
                tma=True, sm_count=132, smem_stages=4, fp8_cvt=True)

#: the NVIDIA compile targets by name
NV_TARGETS = {t.name: t for t in (SM90, SM80)}

#: the target a launch on CUDA arrays compiles for when none is named
DEFAULT_NV_TARGET = "sm90"


def nv_target(name: str) -> NvTarget:
    """The NVIDIA target called ``name`` (a key of :data:`NV_TARGETS`)."""
    try:
        return NV_TARGETS[name]
    except KeyError:
        raise UsageError(f"unknown NVIDIA target {name!r}; known: {', '.join(NV_TARGETS)}") from None


def for_compute_capability(major: int, minor: int) -> NvTarget:
    """The target whose code a device of compute capability ``major.minor`` runs: sm90 on
    Hopper (9.x), sm80 on Ampere and Ada (8.x); older devices have no m16n8k16 mma."""
    if major >= 9:
        return SM90
    if major == 8:
        return SM80
    raise UsageError(f"compute capability {major}.{minor}: the NVIDIA targets need 8.0 or later (mma.sync m16n8k16)")
