"""Intel GPU builtins (DPAS, 2D block IO) for the LLVM-IR code generator.

:class:`IntelBuiltins` hands codegen one ``ir.Function`` per builtin flavour and module:

* on a GPU (``emulate=False``) DPAS is a *declaration* under the real Itanium-mangled
  Intel OpenCL name, which the SPIR-V backend turns into an imported function that IGC
  resolves (the Xe codegen reference (Intel's ISA and IGC builtin rules) §2.3, §3.1);
* on the OpenCL CPU device (``emulate=True``) the same name is *defined* in the module,
  with a body written from the specs (§2.4, §3.4, §7), so one module runs anywhere.

2D loads/stores are small wrappers with a fixed per-lane interface (the sg_map fragment
order); whether a wrapper uses a 2D block message or plain loads is decided here, from
the :class:`~xetile_dsl.targets.target.Target`, never from a chip name.
The work is split over ``dpas.py`` and ``block2d.py``; this file holds
the facade, the memo and the few helpers both share.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from xetile_dsl.targets.target import Target

from . import block2d, dpas, texts
from . import transposed_loads as transpose
from .mangle import mangle

I8, I16, I32, I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F16, F32 = ir.HalfType(), ir.FloatType()
GLOBAL_PTR = ir.PointerType(addrspace=1)  # CrossWorkgroup
PRIVATE_PTR = ir.PointerType(addrspace=0)  # Function storage (alloca)

_LANE_ID = "_Z22get_sub_group_local_idv"
#: shuffles are always done on 32-bit ints: one declaration, and every OpenCL device
#: with cl_intel_subgroups supports ``int`` (short/char shuffles are extra extensions).
_SHUFFLE_I32 = mangle("intel_sub_group_shuffle", ["i", "j"])


class IntelBuiltins:
    """Creates (once per module, memoized) the Intel builtins codegen calls.

    ``emulate=True`` defines the GPU-only builtins in the module (for the OpenCL CPU
    device); otherwise they are declarations resolved by the GPU driver.
    """

    def __init__(self, module: ir.Module, target: Target, emulate: bool):
        self.module = module
        self.target = target
        self.emulate = emulate
        self._memo: dict[tuple, ir.Function] = {}
        #: lists that record every name declare/declare_intrinsic is asked for (texts)
        self.recorders: list[list[str]] = []

    # --- subgroup primitives -------------------------------------------------
    @property
    def subgroup_size(self) -> int:
        return self.target.subgroup_size

    def lane_id(self, builder: ir.IRBuilder) -> ir.Value:
        """This work item's i32 index in its subgroup."""
        fn = self.declare(_LANE_ID, ir.FunctionType(I32, []))
        return builder.call(fn, [], name="lane")

    def shuffle_i32(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        """``value`` of work item ``lane`` (OpSubgroupShuffleINTEL).  Convergent: call it
        from straight-line code that every lane executes."""
        fn = self.declare(_SHUFFLE_I32, ir.FunctionType(I32, [I32, I32]))
        # convergent: LLVM must not move a subgroup operation into or out of control flow
        # (loop rotation would otherwise make it execute under a lane-dependent condition).
        fn.attributes.add("convergent")
        return builder.call(fn, [value, lane])

    # --- the builtins codegen asks for ----------------------------------------
    def dpas(self, a_type: str, b_type: str, acc_type: str, m: int) -> ir.Function:
        """``R f(A a, B b, R acc)``: one DPAS with ``m`` rows (per-lane types §2.1)."""
        key = ("dpas", a_type, b_type, acc_type, m)
        return self._memoized(key, lambda: dpas.build_dpas(self, a_type, b_type, acc_type, m))

    def load_2d(self, elem_bits: int, rows: int, cols: int, count: int,
                wi_layout: tuple[int, int], wi_data: tuple[int, int], per_lane: bool = False) -> ir.Function:
        """``<V x iE> f(ptr addrspace(1) base, i32 width_bytes, i32 height_rows,
        i32 pitch_bytes, i32 x_elems, i32 y_rows)``: this lane's sg_map fragment of the
        ``rows x (cols*count)`` block at (x, y); out-of-bounds elements read as 0.
        ``per_lane``: plain per-lane loads even where a 2D block read exists (an array
        whose rows are narrower than 2D block messages allow)."""
        per_lane = self.load_2d_kind(elem_bits, rows, cols, count, wi_layout, wi_data, per_lane) == "gather"
        key = ("load_2d", elem_bits, rows, cols, count, tuple(wi_layout), tuple(wi_data), per_lane)
        return self._memoized(key, lambda: block2d.build_load(self, *key[1:]))

    def load_2d_pieces(self, elem_bits: int, rows: int, cols: int, count: int,
                       wi_layout: tuple[int, int], wi_data: tuple[int, int], per_lane: bool = False) -> ir.Function:
        """``void f(surface..., ptr out)``: :meth:`load_2d` for a fragment larger than one
        SPIR-V vector (a coalesced message): this lane's fragment, in order, is written to
        the private array ``out`` (``iE`` elements), which codegen reads in pieces."""
        key = ("load_2d_pieces", elem_bits, rows, cols, count, tuple(wi_layout), tuple(wi_data), per_lane)
        return self._memoized(key, lambda: block2d.build_load_pieces(self, *key[1:]))

    def pad_2d(self, elem_bits: int, rows: int, cols: int, count: int,
               wi_layout: tuple[int, int], wi_data: tuple[int, int]) -> ir.Function:
        """``<V x iE> f(surface..., <V x iE> fragment, iE pad)``: the fragment of
        :meth:`load_2d` with every out-of-bounds element replaced by ``pad`` (bits)."""
        key = ("pad_2d", elem_bits, rows, cols, count, tuple(wi_layout), tuple(wi_data))
        return self._memoized(key, lambda: block2d.build_pad(self, *key[1:]))

    def load_2d_transposed(self, elem_bits: int, rows: int, cols: int, wi_layout: tuple[int, int],
                           wi_data: tuple[int, int], per_lane: bool = False, lane_rows: bool = False) -> ir.Function:
        """Like :meth:`load_2d` for ``load_nd {transpose}``: the surface and (x, y) are the
        memory block's (``rows x cols`` of the array); the result is this lane's fragment
        of its ``cols x rows`` transpose under the logical sg_map ``(wi_layout, wi_data)``.
        ``lane_rows``: the load may use per-lane row loads (lowering/rewrites/transposed_tiles.py
        ``dialects.attributes.LANE_ROWS_ATTR``)."""
        kind = transpose.transpose_kind(self.target, elem_bits, rows, cols, wi_layout, wi_data,
                                                 per_lane, lane_rows)
        per_lane, lane_rows = kind == "gather", kind == "lane_rows"
        key = ("load_2d_t", elem_bits, rows, cols, tuple(wi_layout), tuple(wi_data), per_lane, lane_rows)
        return self._memoized(key, lambda: transpose.build_load_transposed(self, *key[1:]))

    def pad_2d_transposed(self, elem_bits: int, rows: int, cols: int,
                          wi_layout: tuple[int, int], wi_data: tuple[int, int]) -> ir.Function:
        """``<V x iE> f(surface..., <V x iE> fragment, iE pad)``: the fragment of
        :meth:`load_2d_transposed` with every element whose memory element lies outside
        the surface replaced by ``pad`` (bits)."""
        key = ("pad_2d_t", elem_bits, rows, cols, tuple(wi_layout), tuple(wi_data))
        return self._memoized(key, lambda: transpose.build_pad_transposed(self, *key[1:]))

    def store_2d(self, elem_bits: int, rows: int, cols: int,
                 wi_layout: tuple[int, int], wi_data: tuple[int, int], per_lane: bool = False) -> ir.Function:
        """``void f(ptr addrspace(1) base, i32 width_bytes, i32 height_rows,
        i32 pitch_bytes, i32 x, i32 y, <V x iE> value)``: writes this lane's fragment;
        out-of-bounds elements are not written."""
        per_lane = self.store_2d_kind(elem_bits, rows, cols, wi_layout, wi_data, per_lane) == "scatter"
        key = ("store_2d", elem_bits, rows, cols, tuple(wi_layout), tuple(wi_data), per_lane)
        return self._memoized(key, lambda: block2d.build_store(self, *key[1:]))

    def prefetch_2d(self, elem_bits: int, rows: int, cols: int, count: int,
                    controls: tuple[tuple[int, int], ...] = (), per_lane: bool = False) -> ir.Function:
        """``void f(ptr addrspace(1) base, i32 width_bytes, i32 height_rows,
        i32 pitch_bytes, i32 x, i32 y)``: a cache hint; a no-op where unsupported.
        ``controls`` are (cache level, load control) pairs for the GPU (see
        :meth:`Target.cache_controls`); the CPU device ignores them."""
        per_lane = not block2d.prefetch_legal(self.target, elem_bits, rows, cols, count, per_lane)
        key = ("prefetch_2d", elem_bits, rows, cols, count, () if self.emulate else tuple(controls), per_lane)
        return self._memoized(key, lambda: block2d.build_prefetch(self, *key[1:]))

    # --- questions codegen may ask ---------------------------------------------
    def is_legal_load_2d(self, elem_bits, rows, cols, count, wi_layout, wi_data) -> bool:
        """Whether :meth:`load_2d` can build this distribution at all."""
        return block2d.check_fragment(self.subgroup_size, elem_bits, rows, cols * count,
                                               wi_layout, wi_data) is None

    def is_legal_store_2d(self, elem_bits, rows, cols, wi_layout, wi_data) -> bool:
        """Whether :meth:`store_2d` can build this distribution at all."""
        return self.is_legal_load_2d(elem_bits, rows, cols, 1, wi_layout, wi_data)

    def load_2d_kind(self, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane=False) -> str:
        """How :meth:`load_2d` reads: ``"read"``/``"read_transform"`` (a 2D block
        builtin) or ``"gather"`` (per-lane guarded loads)."""
        return block2d.load_kind(self.target, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane)

    def store_2d_kind(self, elem_bits, rows, cols, wi_layout, wi_data, per_lane=False) -> str:
        """``"write"`` (2D block builtin) or ``"scatter"`` (guarded per-lane stores)."""
        return block2d.store_kind(self.target, elem_bits, rows, cols, wi_layout, wi_data, per_lane)

    # --- helpers shared by builtins_*.py ---------------------------------------
    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """The module's function ``name`` (declared ``spir_func`` if new)."""
        self._record(name)
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, fnty, name)
            fn.calling_convention = "spir_func"
        elif fn.function_type != fnty:
            raise TypeError(f"{name} already declared as {fn.function_type}, wanted {fnty}")
        return fn

    def gpu_builtin(self, name: str, fnty: ir.FunctionType, define: Callable[[], ir.Function]) -> ir.Function:
        """The GPU driver's builtin ``name``: the module's function of that name when it has
        one, else a declaration (a GPU target: the driver resolves it) or, emulated for the
        CPU device, what ``define()`` returns (the builtin defined from its spec)."""
        fn = self.module.globals.get(name)
        if fn is not None:
            return fn
        return define() if self.emulate else self.declare(name, fnty)

    def declare_intrinsic(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """An LLVM intrinsic (default calling convention, unlike OpenCL builtins)."""
        self._record(name)
        fn = self.module.globals.get(name)
        return fn if fn is not None else ir.Function(self.module, fnty, name)

    def define_internal(self, name: str, fnty: ir.FunctionType, inline: bool = True) -> ir.Function:
        """A new internal ``spir_func`` ``name`` for the caller to give a body.

        For a GPU, ``inline`` wrappers are ``alwaysinline`` (IGC sees the message inline).
        Emulated for the OpenCL CPU runtime, every wrapper is ``noinline`` (and
        ``convergent``: it holds subgroup calls): the runtime then compiles each body once,
        as a vector variant, instead of once per call site -- inlined, a GEMM's 64 DPAS and
        load bodies made a program of ~70k instructions whose build took over a minute
        (a 32x64x32 ARC GEMM: 72 s of CPU, 2.6 s with the wrappers called)."""
        fn = self.declare(name, fnty)
        if not fn.is_declaration:
            raise ValueError(f"{name} is already defined in this module")
        fn.linkage = "internal"
        if self.emulate:
            fn.attributes.add("noinline")
            fn.attributes.add("convergent")
        elif inline:
            fn.attributes.add("alwaysinline")
        return fn

    def _memoized(self, key: tuple, build) -> ir.Function:
        """The wrapper of ``key``, built once.  A key's ``per_lane`` is normalised by its
        callers to "the wrapper works per lane" (gather/scatter/no prefetch): a per-lane
        request and a plain one that falls back to per-lane code build the same function,
        under the same name, which a second build would define twice."""
        fn = self._memo.get(key)
        if fn is None:
            fn = self._memo[key] = self.build_once(key, build)
        return fn

    def build_once(self, key: tuple, build) -> ir.Function:
        """``build()``; emulated, its text is kept per process (texts.py)."""
        return texts.build_once(self, key, build) if self.emulate else build()

    def _record(self, name: str) -> None:
        for recorder in self.recorders:
            recorder.append(name)
