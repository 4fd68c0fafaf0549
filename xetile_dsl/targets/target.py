"""The target description: the one place that knows hardware facts.

Every pass that needs a number about the GPU (subgroup size, DPAS shapes, 2D block
limits, SLM size, ...) asks a :class:`Target`.  Nothing else in the compiler tests the
name of a chip.  Facts come from the Xe codegen reference (Intel's ISA and IGC builtin rules) (checked with
the offline compiler) and the XeGPU RFC's sg_map rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import UsageError
from . import launch_facts

#: the rows of a block that is no DPAS operand (accumulators, element-wise values, loaded
#: and stored tiles: lowering/analysis/op_kinds.c_blocks) on a target without DPAS, where
#: no repeat count decides them (:attr:`Target.dpas_m`)
BLOCK_ROWS_WITHOUT_DPAS = 8


@dataclass(frozen=True)
class DpasConfig:
    """One DPAS flavour: ``D[M,N] = A[M,K] x B[K,N] + C[M,N]`` for one subgroup.

    ``m_values`` are the legal repeat counts (rows of A per instruction); ``n`` equals
    the subgroup size; ``k`` depends on the input precision.
    """

    a_type: str
    b_type: str
    acc_types: tuple[str, ...]
    k: int
    n: int
    m_values: tuple[int, ...] = (1, 2, 4, 8)

    @property
    def m(self) -> int:
        return max(self.m_values)


@dataclass(frozen=True)
class Block2DShape:
    """One legal 2D block message: ``rows x cols`` elements, ``count`` blocks wide."""

    elem_bits: int
    rows: tuple[int, ...]
    cols: int
    count: int


@dataclass(frozen=True)
class GemmTile:
    """One workgroup tile of the ready-made workgroup GEMM (``kernels/gemm_wg.py``): a
    ``bm x bn`` tile of C per workgroup over ``sm x sn`` subgroups, A and B prefetched
    ``pf`` K steps ahead.  Chosen per target (register file, subgroups per core, XMX
    rate) from the ISA each builds to (README, "GEMMs per target")."""

    bm: int
    bn: int
    sm: int
    sn: int
    pf: int = 3
    #: DPAS K blocks per K step (BK = k_blocks x the DPAS K of the input type); 1 halves
    #: the operand registers a step holds (ARC's 8 lanes need twice the registers per tile)
    k_blocks: int = 2

    def constants(self) -> dict:
        """The gemm_wg_kernel constexprs this tile sets (BK depends on the input type:
        :meth:`bk`)."""
        return {"BM": self.bm, "BN": self.bn, "SM": self.sm, "SN": self.sn, "PF": self.pf}

    def bk(self, dpas_k: int) -> int:
        """The K step for inputs whose DPAS K block is ``dpas_k`` elements."""
        return self.k_blocks * dpas_k


@dataclass(frozen=True)
class Block2DLimits:
    """Restrictions that apply to every 2D block message (surface side)."""

    base_align_bytes: int = launch_facts.BASE_ALIGN_BYTES
    min_width_bytes: int = launch_facts.NARROW_ROW_BYTES
    #: the surface width of 8- and 16-bit data must be a whole number of these (bytes)
    width_multiple_bytes: int = launch_facts.ROW_BYTES_MULTIPLE
    pitch_align_bytes: int = launch_facts.PITCH_ALIGN_BYTES
    max_surface: int = 1 << 24

    def launch_rule_problem(self) -> str | None:
        """What a launch's narrow-row rule (:mod:`.launch_facts`, read without the tables)
        would get wrong for these limits, or None: a limit stricter than the rule's."""
        rule = {"base_align_bytes": launch_facts.BASE_ALIGN_BYTES, "min_width_bytes": launch_facts.NARROW_ROW_BYTES,
                "width_multiple_bytes": launch_facts.ROW_BYTES_MULTIPLE,
                "pitch_align_bytes": launch_facts.PITCH_ALIGN_BYTES}
        stricter = [f"{k} = {getattr(self, k)} > {v}" for k, v in rule.items() if getattr(self, k) > v]
        return "; ".join(stricter) or None


@dataclass(frozen=True)
class OpTiles:
    """The tiles of the ready-made ops (``xetile_dsl/ops``) on one target: tuning
    choices (tiles that compile without spills, checked with ocloc through ``report()``,
    benchmarks/vs_onednn.py), not hardware facts.  A target that declares none gets
    :meth:`rule_for`'s, derived from its own DPAS and block facts."""

    #: GEMM (BM, BN, BK) by numpy input dtype name
    gemm: tuple[tuple[str, tuple[int, int, int]], ...]
    #: row-wise ops (softmax, norms): (rows per program BM, columns per chunk BC)
    rows: tuple[int, int] = (2, 256)
    #: softmax and the norms' whole-row form (ops/rows.py: each row read once and held in
    #: registers, BN = the power of two >= N columns over several warps): the widest BN it
    #: takes (0: never, the chunked ``rows`` form everywhere), the elements of a row one
    #: thread holds (num_warps = BN / (32 x that), at most ``rows_whole_max_warps``)
    rows_whole_max: int = 0
    rows_whole_per_thread: int = 32
    rows_whole_max_warps: int = 16
    #: flash attention (queries per program BM, keys per step BN) by head dim
    attention: tuple[tuple[int, tuple[int, int]], ...] = ((32, (8, 16)), (64, (8, 16)), (128, (8, 16)))
    #: ops.attention's kernel form: "transposed" (needs transposed 2D block reads) or "rows"
    attention_form: str = "rows"
    #: whether the rows form runs the key blocks that need no mask in a loop of their own
    #: (attention.attention_rows_split_nd_kernel: NVIDIA's wgmma key loops)
    attention_split: bool = False
    #: head dims whose ops.attention (not varlen) runs O = P V with V a VNNI operand B
    #: (attention.attention_vnni_kernel) instead of attention_form, with its (BM, BN)
    attention_vnni: tuple[tuple[int, tuple[int, int]], ...] = ()
    #: flash attention backward by head dim: (queries per dk/dv step and per dq program BM,
    #: keys per dk/dv program BN, keys per dq step BK); BK is the K of the dq product
    attention_backward: tuple[tuple[int, tuple[int, int, int]], ...] = (
        (32, (16, 8, 16)), (64, (16, 8, 16)), (128, (16, 8, 16)))
    #: queries per dq program of the rows form's backward by head dim, where they are not
    #: BM (its dQ [queries, D] accumulator and Q, dO operands live across the key loop)
    attention_backward_dq_queries: tuple[tuple[int, int], ...] = ()
    #: ops.decode_attention: the smallest query-head group per kv head that multiplies on
    #: DPAS (smaller ones compute element-wise), the most query heads per program (a
    #: larger group takes several programs), keys per step by head dim (a cache block of
    #: more is walked in steps), and the fewest keys per split of the context.  pvc
    #: (ocloc, f16, 16-key blocks .. 64): 8 heads x 64 keys at D = 64 and x 32 at D = 128
    #: spill nothing; 16 heads spill 384 B at D = 64 x 16 keys, 8 heads x 64 keys at
    #: D = 128 spill 128 B
    decode_mma_group: int = 2
    decode_max_rows: int = 8
    decode_keys_per_step: tuple[tuple[int, int], ...] = ((64, 64), (128, 32))
    decode_min_split_keys: int = 256
    #: ops.matmul_wq (weight-only int4/int8): (largest BM, BN); BM follows M below it as
    #: gemm_tiles' small-M rule does
    weight_quant: tuple[int, int] = (32, 32)
    #: warps a program of ops.matmul takes when it fuses a transcendental activation
    #: (gelu, gelu_tanh, silu), where the default count spills; None: the compiler's count
    gemm_activation_warps: int | None = None
    #: warps of an fp8 ``ops.matmul`` program where the target names an ``fp8`` GEMM tile
    #: (NVIDIA: fp8 widened to f16 in registers, mma.sync)
    gemm_fp8_warps: int | None = None
    #: (dtype name, (BM, BN, BK)) of an ops.matmul program that fuses an epilogue (a bias
    #: row or an activation), where ``gemm``'s tile would spill beside the epilogue's
    #: values; () or a dtype absent: ``gemm``'s tile
    gemm_epilogue: tuple = ()
    #: row blocks of C per group of ops.matmul's program order (1: the plain grid; more:
    #: the programs of a wave share panels of A and B in L2)
    gemm_group_m: int = 1
    #: (dtype name, warps) of an ops.matmul program of that input dtype where the compiler's
    #: own count spills (NVIDIA: the int8 and tf32 mma.sync programs take 8)
    gemm_dtype_warps: tuple = ()
    #: (dtype name, tiles) of a skinny ops.matmul without an epilogue: where ``gemm``'s
    #: tile gives fewer programs than :data:`SKINNY_WAVE` of the GPU's multiprocessors (a
    #: small M, or N), the first of these tiles that gives enough, else the last (the
    #: most programs); () or a dtype absent: ``gemm``'s tile whatever the shape
    gemm_skinny: tuple = ()

    @staticmethod
    def rule_for(target: "Target") -> "OpTiles":
        """Small tiles any target with these facts compiles: GEMM BM = 4 DPAS repeats
        (the target's largest M), BN = 2 DPAS N, BK = 2 DPAS K (4 for tf32, whose BK of
        2 K blocks hits a known loop bug, tests/e2e/test_mma_types.py); one subgroup's
        worth of 32-lane rows per program for the row ops."""
        gemm = tuple((OP_DTYPE_NAMES[c.a_type], (4 * c.m, 2 * c.n, (4 if c.a_type == "tf32" else 2) * c.k))
                     for c in target.dpas if c.a_type == c.b_type and c.a_type in OP_DTYPE_NAMES)
        form = "transposed" if target.has_2d_block_io and target.block2d_read_transpose else "rows"
        return OpTiles(gemm=gemm, rows=(max(1, 32 // target.subgroup_size), 256), attention_form=form)


@dataclass(frozen=True)
class Target:
    """Everything a pass may ask about one GPU."""

    name: str
    ocloc_device: str
    subgroup_size: int
    dpas: tuple[DpasConfig, ...]
    has_2d_block_io: bool
    #: units per lane of the subgroup block reads/writes (cl_intel_subgroups, _short,
    #: _char: one uniform address, lane n moves units n, n + lanes, ...), () if none;
    #: used, one message per row, where there is no 2D block IO
    subgroup_block_units: tuple[int, ...] = ()
    #: element widths (bits) whose tile rows those messages move; other widths keep
    #: per-lane loads and stores (ARC: 8-bit rows made a 32x32 int8 GEMM piece spill 512 B,
    #: its per-lane loads do not; ocloc 26.27)
    row_block_elem_bits: tuple[int, ...] = ()
    #: element widths (bits) of transposed reads (``order = [0, 1]`` operand tiles) whose
    #: lanes each hold whole runs of a memory row, read with per-lane vector loads (one
    #: ``load.ugm.d32x8`` = 256 bytes per 8 lanes: ocloc dg2-g10) where there is no 2D
    #: block IO; with them a row-major A.B K loop computes C^T = B^T.A^T
    #: (lowering/passes/wg_to_sg/operand_swap.py), () if not
    lane_row_load_elem_bits: tuple[int, ...] = ()
    block2d_read: tuple[Block2DShape, ...] = ()
    block2d_read_transform: tuple[Block2DShape, ...] = ()
    block2d_read_transpose: tuple[Block2DShape, ...] = ()
    block2d_write: tuple[Block2DShape, ...] = ()
    block2d_prefetch: tuple[Block2DShape, ...] = ()
    block2d_limits: Block2DLimits = field(default_factory=Block2DLimits)
    iga_platform: str = ""  # IGA's name of the ISA (iga64 -p), for disassembling without ocloc
    slm_bytes: int = 64 * 1024
    grf_count: int = 128
    grf_bytes: int = 64  # bytes per general register
    large_grf_count: int = 256
    large_grf_option: str = "-ze-opt-large-register-file"  # IGC option selecting large_grf_count
    #: share of the largest register file (large_grf_count x grf_bytes) a K loop's DPAS
    #: accumulators and the operands of one DPAS may fill; the rest holds addresses,
    #: loop-carried descriptors, loop state and the loads IGC issues ahead of their DPAS
    #: (measured with ocloc: docs/decisions/015-register-budget.md)
    accumulator_register_share: float = 0.75
    #: the largest tile value one subgroup may hold, in largest register files
    #: (large_grf_count x grf_bytes): far past the register file a value cannot be kept in
    #: registers at all, and its blocked IR (an op per block) is one huge basic block that
    #: the SPIR-V backend and the OpenCL CPU runtime compile superlinearly: a 512x512 f16
    #: copy (512 KiB) took 100+ s (91 s in clBuildProgram).  The limit is 128 KiB on every
    #: target (8 files of pvc's 16 KiB, 16 of arc's 8 KiB), whose worst cases compile in
    #: <= 3.5 s on the 2-core dev machine: copies of 256x256 f16 1.8-3.3 s, 256x128 f32
    #: and 512x256 i8 less; 256 KiB was 3.4-4.6 s (f16 256x512, i8 512x512 on arc), too
    #: close to 5 s.  Such a tile belongs to a workgroup (wg_map) or a loop over smaller tiles
    subgroup_tile_register_files: int = 8
    #: share of the kernel's register file a K step's accumulators and *all* its A and B
    #: operands may fill for those operands to be read in coalesced messages (a message
    #: keeps its K blocks live until its last DPAS); measured with ocloc on pvc: the RFC
    #: 2.1 step (8 + 6 KiB of 16 KiB) does not spill, a 4 + 4 KiB step in the 8 KiB
    #: default file spilled 1.5 KB (docs/decisions/014-blocking-and-block-messages.md)
    coalesced_register_share: float = 0.875
    named_barriers: int = 0  # hardware barriers per workgroup, id 0 being the workgroup barrier
    cache_hints: bool = False  # whether the cache-control decorations set the LSC cache bits
    #: float element types whose atomic add is one hardware atomic (an LSC atomic_fadd
    #: message, from SPIR-V's OpAtomicFAddEXT): f32 on every target here (ocloc 26.27:
    #: atomic_fadd.ugm.d32 for pvc, dg2-g10, bmg, lnl-m, ptl).  Its IGC rejects
    #: SPV_EXT_shader_atomic_float16_add and SPIR-V has no bf16 atomic, so an f16/bf16 add
    #: (and float max/min/mul, and any float atomic on a target without the type here) is
    #: a compare-exchange loop on the 32-bit word holding the element (codegen/emit/atomic_messages.py)
    atomic_float_add: tuple[str, ...] = ("f32",)
    max_workgroup_size: int = 1024
    #: Xe cores of the target's reference product (a product of the family may have fewer:
    #: a real device's own count comes from the runtime, runtime/device_properties.py);
    #: 0 where not stated.  What ``device_properties()`` reports as Triton's
    #: ``multiprocessor_count`` when no GPU answers for itself (the CPU device flavours)
    xe_cores: int = 0
    #: vector engines (EUs, XVEs) per Xe core: the runtime's compute units per Xe core
    eus_per_xe_core: int = 8
    build_options: str = ""  # IGC options (GRF mode) the kernels of this target are built with
    dpas_a_packs_dword: bool = False  # A operand components are 32-bit (ARC) rather than 16-bit (PVC)
    #: whether a loop's transposed 2D block reads take an address payload built before the
    #: loop (codegen/emit/transposed_payloads.py): on pvc IGC rebuilds the second block's payload
    #: of a surface per iteration (copy + add); on Xe2 it already keeps them and the hoisted
    #: payloads cost 1-2 more hot-loop instructions (ocloc 26.27, benchmarks/gemm_isa.py AtB)
    hoist_transposed_read_payloads: bool = False
    #: whether codegen may order an A^T.B-like loop for IGC's scheduler (prefetches through
    #: moved payload copies, grouped before their messages; DPAS after the loads:
    #: codegen/latch_order.py): on pvc IGC then keeps no dummy moves for the prefetches and
    #: fewer syncs, the 256x256 A^T.B GEMM's hot loop 127 -> 120 (ocloc 26.27)
    order_loop_latches: bool = False
    #: throughput model of the ISA report (tools/isa_report.py; sources in docs/tools.md,
    #: "The ISA report"): multiply-accumulates one EU's XMX engine retires per clock, by DPAS
    #: input type, and the instructions one hardware thread issues per clock
    dpas_macs_per_clock: tuple[tuple[str, int], ...] = ()
    thread_issue_per_clock: int = 1
    #: workgroup GEMM tiles, the recommended one first (kernels.gemm_wg's default and
    #: autotuning list); the default is the generic 64x64 tile of 4 x 2 subgroups
    gemm_tiles: tuple[GemmTile, ...] = (GemmTile(64, 64, 4, 2, 2),)
    #: the ready-made ops' tiles (ops/configs.py reads them); None: :meth:`OpTiles.rule_for`
    op_tiles: OpTiles | None = None
    #: lanes the 2D block builtins (``intel_sub_group_2d_block_*``) exist for: they are
    #: SIMD16-only (the Xe codegen reference section 3.1); at another subgroup size the
    #: blocks go through the address-payload and per-lane paths
    block2d_builtin_lanes: int = 16
    #: whether the CPU device runs this target's kernels as the ``cpu-<name>`` flavour (its
    #: GPU-only builtins emulated: codegen/emulation) in the tests' matrix
    cpu_flavour: bool = False

    def row_view_align(self, bits: int) -> int:
        """Elements a 1-D array's ``[1, n]`` view rounds its row pitch up to: the 2D block
        messages' pitch alignment in elements of ``bits`` bits (1 without block messages)."""
        return max(self.block2d_limits.pitch_align_bytes * 8 // bits, 1)

    @property
    def dpas_m(self) -> int:
        """The largest repeat count (``DpasConfig.m``) of this target's DPAS flavours:
        the rows of every block that is no DPAS operand (accumulators, element-wise values,
        loaded and stored tiles), so that a DPAS result block is one such block;
        :data:`BLOCK_ROWS_WITHOUT_DPAS` on a target without DPAS.  The flavours must agree
        on it (``catalog.register_target`` refuses a target whose flavours do not)."""
        return max((c.m for c in self.dpas), default=BLOCK_ROWS_WITHOUT_DPAS)

    def dpas_rows_problem(self) -> str | None:
        """Why the lowering cannot build this target's DPAS, or None: flavours whose largest
        repeat counts differ.  Every block that is no DPAS operand has :attr:`dpas_m` rows
        and a tile_mma pairs operand A's block rows with its result's (lowering/passes/
        xetile_to_xegpu.py), so each flavour's A blocks must be :attr:`dpas_m` rows too."""
        rows = {}
        for c in self.dpas:
            rows.setdefault(c.m, []).append(f"{c.a_type}x{c.b_type}")
        if len(rows) < 2:
            return None
        each = "; ".join(f"{', '.join(names)}: {m}" for m, names in sorted(rows.items()))
        return (f"its DPAS flavours' largest repeat counts (rows of A per DPAS) differ ({each}); accumulators and "
                f"other tiles are blocked in rows of the one largest repeat count (Target.dpas_m, "
                f"lowering/analysis/op_kinds.c_blocks), so every flavour's m_values must end at the same count")

    def ops_tiles(self) -> OpTiles:
        """The ready-made ops' tiles here: the declared :attr:`op_tiles`, else the rule."""
        return self.op_tiles if self.op_tiles is not None else OpTiles.rule_for(self)

    # --- questions passes ask ------------------------------------------------
    def max_subgroup_tile_bytes(self) -> int:
        """Bytes of the largest tile value one subgroup may hold (``subgroup_tile_register_files``)."""
        return self.subgroup_tile_register_files * self.large_grf_count * self.grf_bytes

    def dpas_for(self, a_type: str, b_type: str) -> DpasConfig | None:
        """The DPAS flavour for these input element types, or None.  f32 inputs are
        multiplied by the tf32 flavour (the only 32-bit-input DPAS), where there is one."""
        a_type, b_type = (MMA_INPUT_ALIASES.get(t, t) for t in (a_type, b_type))
        for cfg in self.dpas:
            if cfg.a_type == a_type and cfg.b_type == b_type:
                return cfg
        return None

    def fp8_mma_input(self, a_type: str, b_type: str) -> str | None:
        """The DPAS input type fp8 operands of ``tile_mma`` are converted to in registers
        (exact: every e4m3/e5m2 value is an f16 and a bf16), or None where the target has
        a DPAS flavour for the pair itself.  No target here has fp8 DPAS (the XeGPU RFC's
        DPAS takes f16, bf16, i8/u8 and tf32): f16, or bf16 next to a bf16 operand."""
        if self.dpas_for(a_type, b_type) is not None:
            return None
        return "bf16" if "bf16" in (a_type, b_type) else FP8_MMA_INPUT

    @property
    def masked_store_lanes(self) -> int:
        """The multiple of columns a store_tile under a per-element mask needs: one element
        a lane of the subgroup (its scatter message)."""
        return self.subgroup_size

    def sg_map(self, role: str, elem_bits: int, is_tf32: bool = False) -> tuple[tuple[int, int], tuple[int, int]]:
        """(wi_layout, wi_data) the XeGPU RFC prescribes for a DPAS operand ``role``
        ("A", "B") or any other 2-D block ("C"), for elements of ``elem_bits`` bits."""
        lanes = self.subgroup_size
        pack = max(1, 32 // elem_bits) if elem_bits < 32 else 1
        if role == "B":
            return (1, lanes), (pack, 1)
        tf32 = self.dpas_for("tf32", "tf32")
        if role == "A" and (is_tf32 or elem_bits == 32) and tf32 is not None:
            # tf32 A: lane n holds column n mod K of rows 2i + n // K (K = 8 on 16 lanes),
            # the RFC's wi_layout [2, 8] on PVC.
            return (lanes // tf32.k, tf32.k), (1, 1)
        if role == "A" and not is_tf32 and elem_bits < 32:
            # PVC keeps 16-bit A elements one per lane (i16 components); ARC packs them in
            # 32-bit components. 8-bit A is packed in pairs on PVC, in fours on ARC.
            per_lane = pack if self.dpas_a_packs_dword else max(1, pack // 2)
            return (1, lanes), (1, per_lane)
        return (1, lanes), (1, 1)

    def cache_controls(self, hints: dict[str, str]) -> tuple[tuple[int, int], ...]:
        """(level, load control) decorations for XeGPU load/prefetch ``hints``: the lowest
        level whose hint differs from the default (cached), and none where the target
        ignores them (``cache_hints``).  One decoration at most: spirv-val 2025.5 rejects
        two ``CacheControlLoadINTEL`` on one pointer (the Xe codegen reference section 6),
        so L1 + L3 uncached (locality 0) reaches the ISA as L1 uncached (``.uc.ca``)."""
        if not self.cache_hints:
            return ()
        controls = sorted((CACHE_CONTROL_LEVELS[k], CACHE_CONTROL_LOAD[v]) for k, v in hints.items()
                          if k in CACHE_CONTROL_LEVELS and v != "cached")
        return tuple(controls[:1])

    def named_barrier_ids(self) -> range:
        """Ids a kernel may give its own named barriers: 1 .. named_barriers - 1 (id 0 is
        the workgroup barrier ``gpu.barrier`` uses; IGC counts it in ``barrier_count``)."""
        return range(1, self.named_barriers)

    def build_options_for(self, large_grf: bool) -> str:
        """IGC options for a kernel of this target; ``large_grf`` asks for the large
        register file (the 256-GRF mode)."""
        opts = self.build_options.split()
        if large_grf and self.large_grf_option not in opts:
            opts.append(self.large_grf_option)
        return " ".join(opts)

    def dpas_cycles(self, a_type: str, macs: int) -> float | None:
        """Clocks one EU's XMX engine needs for ``macs`` multiply-accumulates of DPAS input
        type ``a_type`` ("f16", "bf16", "i8", "u8", "tf32"), None if the model has no rate."""
        rate = dict(self.dpas_macs_per_clock).get(a_type)
        return macs / rate if rate else None

    def legal_mma_inputs(self) -> list[str]:
        return sorted({f"{c.a_type}x{c.b_type}" for c in self.dpas})

    def find_block2d(self, kind: str, elem_bits: int, rows: int, cols: int, count: int = 1) -> Block2DShape | None:
        """The 2D block shape of ``kind`` (read, read_transform, read_transpose, write,
        prefetch) that covers exactly ``rows x cols x count`` elements, or None."""
        for shape in getattr(self, f"block2d_{kind}"):
            if shape.elem_bits == elem_bits and shape.cols == cols and shape.count == count and rows in shape.rows:
                return shape
        return None

    def block2d_shapes(self, kind: str, elem_bits: int) -> list[tuple[int, int, int]]:
        """All (rows, cols, count) legal for ``kind`` at this element width."""
        return [(r, s.cols, s.count) for s in getattr(self, f"block2d_{kind}") if s.elem_bits == elem_bits for r in s.rows]


#: the DPAS input type fp8 tile_mma operands become where a target has no fp8 DPAS: f16
#: holds every e4m3fn and e5m2 value exactly (e5m2 is f16's top byte), with 10 mantissa
#: bits to bf16's 7, and DPAS multiplies f16 and bf16 alike (f32 accumulation)
FP8_MMA_INPUT = "f16"
#: element types tile_mma accepts under another DPAS input name
MMA_INPUT_ALIASES = {"f32": "tf32"}
#: numpy dtype names of the DPAS input types (the ops name their inputs by numpy dtype)
OP_DTYPE_NAMES = {"f16": "float16", "bf16": "bfloat16", "i8": "int8", "u8": "uint8", "tf32": "float32"}

#: XeGPU cache hints of ``prefetch_tile locality<n>`` (XeTile RFC: 0 = no locality ..
#: 3 = keep in cache).  Intel's load/store unit has two cache levels, which XeGPU calls
#: L1 and L3 (``l2_hint`` is not used, as the XeGPU RFC allows); the RFC's "L2 prefetch"
#: (Appendix 2.5) is PVC's L2 cache, LSC level L3.  So: 3 = into L1 and L3 (the hardware
#: default, ``.ca.ca``), 2 and 1 = into L3 only, bypassing L1 (``.uc.ca``), 0 = into
#: neither (``.uc.uc``).
PREFETCH_LOCALITY_HINTS = {
    3: {"l1_hint": "cached", "l3_hint": "cached"},
    2: {"l1_hint": "uncached", "l3_hint": "cached"},
    1: {"l1_hint": "uncached", "l3_hint": "cached"},
    0: {"l1_hint": "uncached", "l3_hint": "uncached"},
}

#: SPV_INTEL_cache_controls (the Xe codegen reference section 6): cache level per XeGPU
#: hint and load control per policy; decorations on the pointer of a 2D block builtin
CACHE_CONTROL_LEVELS = {"l1_hint": 0, "l3_hint": 1}
CACHE_CONTROL_LOAD = {"uncached": 0, "cached": 1, "streaming": 2, "read_invalidate": 3}

#: IGC's LSC_LDCC cache option of a 2D block prefetch through an address payload
#: (``__builtin_IB_subgroup_block_read_ap_prefetch_*``, docs/decisions/
#: 021-code-shaped-for-igc.md), per :meth:`Target.cache_controls` result: () = L1 and L3 cached (4,
#: ``.ca.ca``, what the OpenCL prefetch builtin sets), L1 uncached = L1UC_L3C (2,
#: ``.uc.ca``).  Other controls keep the OpenCL builtin and its pointer decorations.
PREFETCH_PAYLOAD_CACHE_OPTION = {(): 4, ((CACHE_CONTROL_LEVELS["l1_hint"], CACHE_CONTROL_LOAD["uncached"]),): 2}
#: IGC's LSC_LDCC cache option of a read through an address payload without cache hints
#: (``__builtin_IB_subgroup_block_read_ap_transpose_*``): 0 = the default, the message
#: descriptor of the OpenCL read builtin (pvc: 0x02808403 for the 32b 16r8x1c transpose)
READ_PAYLOAD_DEFAULT_CACHE_OPTION = 0

_R_ALL = (1, 2, 4, 8, 16, 32)
_R_STORE = (1, 2, 4, 8)


def _pvc_dpas(n: int) -> tuple[DpasConfig, ...]:
    # no fp8 flavour: neither the XeGPU RFC's DPAS nor pvc/bmg/arc's XMX engines take
    # e4m3/e5m2 inputs; tile_mma converts them in registers (Target.fp8_mma_input)
    return (
        DpasConfig("f16", "f16", ("f32", "f16"), 16, n),
        DpasConfig("bf16", "bf16", ("f32", "bf16"), 16, n),
        DpasConfig("i8", "i8", ("i32",), 32, n),
        DpasConfig("u8", "u8", ("i32",), 32, n),
        DpasConfig("i8", "u8", ("i32",), 32, n),
        DpasConfig("u8", "i8", ("i32",), 32, n),
        # tf32 A rows are 8 dwords, half a 16-lane register: an M-row block gives each lane
        # M / 2 elements, so M = 1 (half an element) and M = 2 (a scalar, no SPIR-V vector)
        # have no lane layout; the hardware's 1- and 2-row repeats are not used (rows padded to 4)
        DpasConfig("tf32", "tf32", ("f32",), 8, n, m_values=tuple(m for m in (1, 2, 4, 8) if m * 8 // n >= 2)),
    )


def _arc_dpas(n: int) -> tuple[DpasConfig, ...]:
    return (
        DpasConfig("f16", "f16", ("f32",), 16, n),
        DpasConfig("bf16", "bf16", ("f32",), 16, n),
        DpasConfig("i8", "i8", ("i32",), 32, n),
        DpasConfig("u8", "u8", ("i32",), 32, n),
        DpasConfig("i8", "u8", ("i32",), 32, n),
        DpasConfig("u8", "i8", ("i32",), 32, n),
    )


#: 2D block messages of the LSC (Xe-HPC and Xe2): the same shapes on pvc, bmg, lnl and ptl
#: (checked with ocloc: docs/decisions/006-target-description.md)
_BLOCK2D_READ = (
    Block2DShape(8, _R_ALL, 32, 1), Block2DShape(8, _R_ALL, 32, 2), Block2DShape(8, (8, 16, 32), 16, 4),
    Block2DShape(16, _R_ALL, 16, 1), Block2DShape(16, _R_ALL, 16, 2),
    Block2DShape(32, _R_ALL, 8, 1), Block2DShape(32, _R_ALL, 8, 2), Block2DShape(32, _R_ALL, 16, 1),
)
_BLOCK2D_READ_TRANSFORM = (
    Block2DShape(8, (32,), 16, 1), Block2DShape(8, (32,), 16, 2), Block2DShape(8, (32,), 16, 4),
    Block2DShape(16, (16, 32), 16, 1), Block2DShape(16, (16, 32), 16, 2),
)
_BLOCK2D_READ_TRANSPOSE = (Block2DShape(32, (16, 32), 8, 1),)
_BLOCK2D_WRITE = (
    Block2DShape(8, _R_STORE, 16, 1), Block2DShape(8, _R_STORE, 32, 1),
    Block2DShape(16, _R_STORE, 16, 1), Block2DShape(32, _R_STORE, 16, 1),
)
_BLOCK2D_PREFETCH = (
    Block2DShape(8, _R_ALL, 32, 1), Block2DShape(8, _R_ALL, 32, 2), Block2DShape(8, (32,), 16, 1),
    Block2DShape(8, (32,), 16, 2), Block2DShape(8, (8, 16, 32), 16, 4),
    Block2DShape(16, _R_ALL, 16, 1), Block2DShape(16, _R_ALL, 16, 2),
    Block2DShape(32, _R_ALL, 8, 1), Block2DShape(32, _R_ALL, 8, 2), Block2DShape(32, _R_ALL, 16, 1),
)

PVC = Target(
    name="pvc",
    ocloc_device="pvc",
    iga_platform="xehpc",
    subgroup_size=16,
    dpas=_pvc_dpas(16),
    has_2d_block_io=True,
    block2d_read=_BLOCK2D_READ,
    block2d_read_transform=_BLOCK2D_READ_TRANSFORM,
    block2d_read_transpose=_BLOCK2D_READ_TRANSPOSE,
    block2d_write=_BLOCK2D_WRITE,
    block2d_prefetch=_BLOCK2D_PREFETCH,
    slm_bytes=128 * 1024,
    named_barriers=32,
    cache_hints=True,
    # Data Center GPU Max 1550: 2 stacks of 64 Xe-HPC cores; the default FLAT mode shows
    # each stack as one device
    xe_cores=64,
    eus_per_xe_core=8,
    hoist_transposed_read_payloads=True,
    order_loop_latches=True,
    # Xe-HPC core: 8 EUs, 4096 f16/bf16, 8192 int8, 2048 tf32 XMX ops per clock
    dpas_macs_per_clock=(("f16", 256), ("bf16", 256), ("i8", 512), ("u8", 512), ("tf32", 128)),
    # RFC 2.1's 256x256 first: its 32 subgroups of 32x64 fill a Xe-HPC core (8 EUs x 4
    # threads in the 256-GRF mode)
    gemm_tiles=(GemmTile(256, 256, 8, 4), GemmTile(128, 256, 4, 4), GemmTile(128, 128, 4, 2)),
    op_tiles=OpTiles(
        # int8 steps K by 64 (one DPAS eats 32 int8 values of K), tf32 by 32 (8 per DPAS;
        # BK = 16 hits a known PVC-flavour loop bug, tests/e2e/test_mma_types.py)
        gemm=(("float16", (32, 32, 32)), ("bfloat16", (32, 32, 32)), ("int8", (32, 32, 64)),
              ("uint8", (32, 32, 64)), ("float32", (32, 32, 32))),
        rows=(4, 256),
        # per head dim; BN is the K of the P V product, a multiple of the DPAS K (16 for
        # f16/bf16).  pvc and bmg (ocloc, report(), causal f16): D = 64 runs 64 keys per
        # step (the per-step O^T rescale and loop overhead spread over twice the DPAS:
        # 12.95 hot-loop instructions per DPAS against 14.41 at 16 x 32; 32 x 32 spills
        # 2.7 KB); D = 128 keeps 32 (16 x 48 and 16 x 64 measure 13.9 and 15.0 per DPAS,
        # 16 x 64 spilling 1.6 KB); D = 32 runs 32 x 32 (20.4 per DPAS against 21.5 at
        # 16 x 64 and 24.2 at 16 x 32; 32 x 64 spills 10 KB, 64 x 16 1.7 KB)
        attention=((32, (32, 32)), (64, (16, 64)), (128, (16, 32))),
        attention_form="transposed",
        # backward (BM, BN, BK), ocloc causal f16: D = 32 doubles the blocks to 32 queries x
        # 16 keys, 32-key dq steps (dq 10.7, dk/dv 14.8 and 10.4 per DPAS against 13.4,
        # 18.6 and 13.6 at 16 x 8 x 16; 32 x 32 x 32 spills 11 KB in dk/dv, 64 x 16 x 32
        # 15 KB in dq); D = 64 and 128 keep 16 x 8 x 16
        attention_backward=((32, (32, 16, 32)), (64, (16, 8, 16)), (128, (16, 8, 16)))),
    cpu_flavour=True,
)

ARC = Target(
    name="arc",
    ocloc_device="dg2-g10",
    iga_platform="xehpg",
    subgroup_size=8,
    dpas=_arc_dpas(8),
    grf_bytes=32,
    subgroup_tile_register_files=16,  # 128 KiB, as on pvc: the compile time is the host's
    has_2d_block_io=False,
    subgroup_block_units=(1, 2, 4, 8),
    row_block_elem_bits=(16, 32),
    lane_row_load_elem_bits=(16,),
    slm_bytes=64 * 1024,
    named_barriers=0,
    cache_hints=False,
    xe_cores=32,          # Arc A770: 32 Xe-HPG cores of 16 EUs (512 EUs)
    eus_per_xe_core=16,
    dpas_a_packs_dword=True,
    # Xe-HPG core: 16 EUs, each XMX engine 128 f16/bf16 or 256 int8 ops per clock
    dpas_macs_per_clock=(("f16", 64), ("bf16", 64), ("i8", 128), ("u8", 128)),
    # 8 lanes need twice the registers per tile of 16: without the 256-GRF mode a
    # 16x32 f32 accumulator already spills (checked with ocloc for dg2-g10).
    build_options="-ze-opt-large-register-file",
    # a K step's operands may fill the whole register file next to the accumulator: the
    # loads are sunk to their DPAS, so a 32x32 f32 accumulator + 32x32 A + 32x32 B (8 KiB,
    # coalesced into 64-byte row reads) compiled without spill (ocloc dg2-g10); BK 64
    # (12 KiB) spilled 32 B at 16x32 pieces and KBs at 32x32
    coalesced_register_share=1.0,
    # 32x32 f32 per subgroup (128 of the 256 GRFs) and two DPAS K blocks per K step: one
    # K loop, 0 spill; f16/bf16 operands by per-lane row loads (C^T = B^T.A^T), 16
    # 256-byte loads per 32 DPAS in bounds, 28 sends counting the edge loops (row reads:
    # 64 + 24; docs/decisions/016-transposes.md)
    gemm_tiles=(GemmTile(128, 128, 4, 4, 2, k_blocks=2), GemmTile(64, 64, 4, 2, 2, k_blocks=2)),
    op_tiles=OpTiles(
        gemm=(("float16", (16, 16, 32)), ("bfloat16", (16, 16, 32)), ("int8", (16, 16, 32)), ("uint8", (16, 16, 32))),
        rows=(2, 256),
        # dg2-g10, 256 GRF: D = 64 spills 13.1 KB at (16, 32), 4.1 KB at (8, 32), none at
        # (8, 16); D = 128 spills at every legal size (15.5 KB at (8, 16), the least);
        # D = 32 spills none at (8, 32) (240 instructions per DPAS against 251 at (8, 16))
        # and 2.8 KB at (16, 16)
        attention=((32, (8, 32)), (64, (8, 16)), (128, (8, 16))),
        # "rows": transposed tiles would be per-element gathers here (measured with ocloc,
        # dg2-g10, D = 64: the transposed form spilled 320 B and gathered)
        attention_form="rows",
        # backward (BM, BN, BK), 8-query dq programs, ocloc causal f16: 16 queries per dk/dv
        # step and 16 keys per dq step are the DPAS's K (8 is refused); one accumulator per
        # dk/dv program (dK and dV together spilled 6.5 KB at D = 64); D = 64 and 32 spill
        # nothing; D = 128 spills in dq (13.6 KB) and dk (1.8 KB), as the forward does;
        # 32-key dq steps at D = 32 measured 187.9 instructions per DPAS against 179.9
        attention_backward=((32, (16, 8, 16)), (64, (16, 8, 16)), (128, (16, 8, 16))),
        attention_backward_dq_queries=((32, 8), (64, 8), (128, 8)),
        # 8 lanes: an f32 [64 keys, 128] step of the element-wise group spilled 62 KB
        decode_keys_per_step=((64, 16), (128, 16))),
    cpu_flavour=True,
)


#: Battlemage: 20 Xe2 cores of 8 vector engines, 4 threads each in the 256-GRF mode:
#: a 256x256 workgroup (32 subgroups) fills one core
_BMG_TILES = (GemmTile(256, 256, 8, 4), GemmTile(128, 256, 4, 4), GemmTile(128, 128, 4, 2))
#: Lunar/Panther Lake: 4-8 Xe cores; a 128x256 workgroup (16 subgroups) keeps two per core
#: and twice the workgroups for a given problem
_LNL_TILES = (GemmTile(128, 256, 4, 4), GemmTile(128, 128, 4, 2), GemmTile(256, 256, 8, 4))


def _xe2(name: str, ocloc_device: str, slm_bytes: int, gemm_tiles: tuple[GemmTile, ...], xe_cores: int,
         iga: str = "xe2") -> Target:
    """An Xe2/Xe3 GPU (Battlemage, Lunar Lake, Panther Lake): PVC's 16-lane DPAS, 2D block
    messages, named barriers and cache controls, at half PVC's XMX rate per vector engine.
    Every fact was checked on ocloc 26.27's output for ``ocloc_device`` (docs/decisions/
    006-target-description.md)."""
    return replace(
        PVC,
        name=name,
        ocloc_device=ocloc_device,
        iga_platform=iga,   # Debian 12's iga64 stops at Xe-HPC: these disassemble with ocloc
        slm_bytes=slm_bytes,
        xe_cores=xe_cores,
        eus_per_xe_core=8,
        # Xe2 core: 8 vector engines, 2048 f16/bf16 and 4096 int8 XMX ops per clock
        # (B580: 116 f16 TFLOPS / 233 int8 TOPS at 2.85 GHz on 20 cores)
        dpas_macs_per_clock=(("f16", 128), ("bf16", 128), ("i8", 256), ("u8", 256), ("tf32", 64)),
        gemm_tiles=gemm_tiles,
        hoist_transposed_read_payloads=False,
        cpu_flavour=False,   # the ops' tiles stay PVC's (op_tiles): same DPAS, blocks and lanes
    )


#: Arc B-series (Battlemage, Xe2-HPG)
BMG = _xe2("bmg", "bmg", 128 * 1024, _BMG_TILES, xe_cores=20)              # Arc B580
# D = 128 as O = P V (V a VNNI operand B, 16 queries x 64 keys): its short path 8.05
# instructions per DPAS against the transposed form's 9.47 at 16 x 32, whose V^T word
# de-interleave is 4.25 of them (ocloc bmg, benchmarks/attention_forms_isa.py); on pvc the
# same kernel ran 13.4 (decision 043)
BMG = replace(BMG, op_tiles=replace(BMG.op_tiles, attention_vnni=((128, (16, 64)),)))
#: Core Ultra 200V (Lunar Lake, Xe2-LPG)
LNL = _xe2("lnl", "lnl-m", 128 * 1024, _LNL_TILES, xe_cores=8)             # Arc 140V
#: Core Ultra 300 (Panther Lake, Xe3-LPG)
PTL = _xe2("ptl", "ptl", 128 * 1024, _LNL_TILES, xe_cores=12, iga="xe3")   # Arc B390

#: the GPU targets by name, in table order; ``catalog.register_target`` adds to it
TARGETS = {t.name: t for t in (PVC, BMG, LNL, PTL, ARC)}


def get_target(name: str) -> Target:
    """Look a GPU target up by name (a key of :data:`TARGETS`)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise UsageError(f"unknown target {name!r}; known targets: {', '.join(sorted(TARGETS))}") from None
