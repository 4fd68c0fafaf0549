"""The compiler driver: Python function -> every stage's IR -> SPIR-V (+ ISA on request).

``compile(fn, signature=..., constants=..., target=...)`` is the public entry point; the
``@jit`` launcher calls :func:`compile_kernel` through the kernel cache, which stores a
kernel with :meth:`CompiledKernel.to_files` (plain bytes and JSON: SPIR-V, ABI, LLVM IR
text, the compile's warnings) and trusts an entry read back only when
:func:`cached_kernel_problem` finds nothing wrong (spirv-val accepts its SPIR-V).
"""
from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import sys
import threading
import warnings
from collections.abc import MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import llvmlite
import numpy as np
import xdsl

from .knobs import debug_tracebacks
from ._lazy import LazyModule
from .dtypes import FP8_TYPES
from .errors import CompilationError, LoweringError, RegisterSpillWarning, ToolError, UsageError
from .frontend.argspec import NARROW, ArgSpec
from .frontend.source import KernelSource, at_user_line
from .launch_options import NO_OPTIONS, LaunchOptions, check_for_target, check_num_subgroups, split_options
from .runtime import launchers
from .runtime.abi import ELEMENT_TYPES, ArrayParam, KernelABI, ScalarParam
from .stage_texts import LOWERING_STAGES, StageTexts, explain_missing_machine_code
from .targets.launch_facts import rows_need_per_lane

# The stages load when a kernel is compiled: a process whose kernels all come from the
# disk cache reads their entries through this module without importing xDSL or LLVM.
frontend = LazyModule("xetile_dsl.frontend.build")  # ~0.5 s: xDSL
stage_log = LazyModule("xetile_dsl.stage_log")  # loads the dialects and the pipeline (xDSL)
spirv_tools = LazyModule("xetile_dsl.tools.spirv_tools")  # a loaded program binary needs no spirv-val
simt_to_llvm = LazyModule("xetile_dsl.codegen.simt_to_llvm")  # codegen: xDSL and llvmlite.binding
spirv_emit = LazyModule("xetile_dsl.codegen.spirv.translate")  # codegen: LLVM
dialects = LazyModule("xetile_dsl.dialects")  # ~0.4 s: xDSL
xtdebug = LazyModule("xetile_dsl.dialects.xtdebug")  # xDSL
pipeline = LazyModule("xetile_dsl.lowering.pipeline")  # ~0.5 s: xDSL
wg_to_sg = LazyModule("xetile_dsl.lowering.passes.wg_to_sg")  # xDSL
lowering_notes = LazyModule("xetile_dsl.lowering.notes")  # would load the lowering package on a warm launch
nv_targets = LazyModule("xetile_dsl.targets.nvidia")  # imports the target tables, which a warm launch does not read
nv_compiler = LazyModule("xetile_dsl.nv_compiler")  # the NVIDIA backend (codegen/nvptx): xDSL, llvmlite
isa_report = LazyModule("xetile_dsl.tools.isa_report")  # ~45 ms, only for k.report()
ocloc = LazyModule("xetile_dsl.tools.ocloc")  # ~35 ms, only when the ISA is built
catalog = LazyModule("xetile_dsl.targets.catalog", globals())  # ~11 ms (the target tables); a warm launch never needs it

# ``k.asm["isa"]`` of a kernel built where ocloc is missing says so (stage_texts.py)
explain_missing_machine_code(lambda: ocloc.ocloc_status()[1])

stats = {"compiles": 0}

#: The cache file holding a kernel's compile warnings (JSON; replayed on a cache hit).
DIAGNOSTICS_FILE = "warnings.json"


def compile_target(name) -> "catalog.CompileTarget":
    """The compile target ``name`` resolved, once per compile: the GPU target (a
    :class:`~xetile_dsl.targets.Target`) whose kernel is built and whether the CPU device
    runs it (``targets/catalog.py`` lists the names: the GPU targets, ``cpu``,
    ``cpu-<flavour>``, ``interpret``); one already resolved is returned as is."""
    return catalog.compile_target(name)


@dataclass
class CompiledKernel:
    """One compiled kernel: every stage's IR in ``asm`` plus what the runtime needs."""

    name: str
    target: str
    abi: KernelABI
    #: stage name -> text (bytes for "spirv"); a compile's MLIR texts are printed when
    #: first read (:class:`~xetile_dsl.stage_texts.StageTexts`)
    asm: MutableMapping = field(default_factory=dict)
    #: seconds per stage of this compile, in pipeline order (:func:`stage_names`)
    timings: dict = field(default_factory=dict)
    #: The compiler's own warnings of this compile ({"category", "message", "filename",
    #: "lineno"}), kept with the cache entry so that a kernel loaded from it warns the same.
    diagnostics: list = field(default_factory=list)
    #: the IR after each stage (:class:`~xetile_dsl.stage_log.IRDump`) with ``dump="all"``
    #: or ``XETILE_DUMP_IR=1``; empty otherwise
    dumps: list = field(default_factory=list)

    @property
    def spirv(self) -> bytes:
        return self.asm["spirv"]

    def launch(self, grid, args, device=None) -> None:
        """Build for ``device`` (the default device) and run on ``grid`` with ``args`` in
        ABI order (numpy arrays are copied back in place); the path for kernels that have
        no ``@jit`` function, e.g. from :func:`compile_mlir`."""
        launchers.get_launcher(device).build(self.spirv, self.abi).launch(grid, list(args))

    def report(self) -> "isa_report.IsaReport":
        """The static ISA report of this kernel (tools/isa_report.py): per innermost loop of
        its PVC/ARC machine code, instructions by class, 2D block shapes, dpas runs and a
        cycle lower bound; GRF mode, spill and SLM bytes.  ``print(k.report())`` shows a
        table, ``k.report().to_json()`` the same for tools.  Needs ocloc and a GPU target."""
        resolved = compile_target(self.target)
        if resolved.emulate or resolved.interpret:
            raise ToolError(f"report() reads GPU machine code, and this kernel was compiled for "
                            f"{self.target!r}: compile with target='pvc' or another GPU target "
                            f"({', '.join(catalog.TARGETS)})")
        gpu = resolved.gpu
        if "zebin" not in self.asm:
            path, reason = ocloc.ocloc_status()
            if path is None:
                raise ToolError(f"report() needs Intel's offline compiler (ocloc) to build the machine "
                                f"code: {reason}")
            self.asm["isa"] = _isa(self, gpu)
        per_lane = [p.name for p in self.abi.params if isinstance(p, ArrayParam) and p.name in self.abi.extra.get(
            "per_lane_arrays", ())]
        return replace(isa_report.zebin_report(self.asm["zebin"], self.abi.kernel_name, gpu), per_lane_arrays=per_lane)

    def to_files(self) -> dict[str, bytes]:
        """The cache entry: SPIR-V, the ABI and the LLVM IR text.  Not the MLIR texts of
        the lowering stages: those are printed only when read (:mod:`.stage_texts`),
        nothing reads them from an entry, and printing them cost a ``@jit`` compile
        ~12% of its time; ``xd.compile`` shows them."""
        files = {"kernel.spv": self.asm["spirv"],
                 "abi.json": json.dumps({"name": self.name, "target": self.target, "abi": self.abi.to_json()}).encode()}
        if "llvm" in self.asm:
            files["llvm.txt"] = self.asm["llvm"].encode()
        files[DIAGNOSTICS_FILE] = json.dumps(self.diagnostics).encode()
        return files

    @staticmethod
    def from_files(files: dict[str, bytes]) -> "CompiledKernel":
        """The kernel of a cache entry (KeyError/ValueError when the entry is malformed)."""
        meta = json.loads(files["abi.json"])
        asm = StageTexts({"spirv": files["kernel.spv"]})
        for stage in (*LOWERING_STAGES, "llvm"):
            if f"{stage}.txt" in files:
                asm[stage] = files[f"{stage}.txt"].decode()
        diagnostics = _parse_diagnostics(files.get(DIAGNOSTICS_FILE, b"[]"))
        return CompiledKernel(meta["name"], meta["target"], KernelABI.from_json(meta["abi"]), asm,
                              diagnostics=diagnostics)

    def replay_diagnostics(self) -> None:
        """Issue this kernel's compile warnings again (a kernel loaded from the cache)."""
        for d in self.diagnostics:
            issue(d)


def cached_kernel_problem(files: dict[str, bytes]) -> str | None:
    """Why the cache entry ``files`` must not be loaded, or None.  Its SPIR-V goes to the
    OpenCL runtime, which may crash on a malformed module, so spirv-val must accept it;
    spirv-val failing in any way (missing, crashing) is a reason too: unproven is invalid."""
    try:
        kernel = CompiledKernel.from_files(files)
        spirv_tools.validate(kernel.spirv)
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, the entry is not trusted
        return f"{type(exc).__name__}: {exc}"
    return None


#: Python's record of the compiler's warnings already shown (the ``registry`` of
#: ``warnings.warn_explicit``, as a module's ``__warningregistry__`` is for ``warnings.warn``):
#: under the default filter a warning shows once per kernel line and message, however
#: often the kernel is compiled or loaded from the cache (Python empties it when the
#: warning filters change).
_SHOWN: dict = {}


def issue(diagnostic: dict) -> None:
    """Warn the compile warning ``diagnostic`` (a :attr:`CompiledKernel.diagnostics`
    record) at its kernel line, through the user's warning filters."""
    category = _warning_category(diagnostic["category"])
    warnings.warn_explicit(category(diagnostic["message"]), category, diagnostic["filename"], diagnostic["lineno"],
                           registry=_SHOWN)


def _parse_diagnostics(data: bytes) -> list[dict]:
    """The warnings list of a cache entry, checked field by field (ValueError if malformed)."""
    items = json.loads(data)
    fields = {"category": str, "message": str, "filename": str, "lineno": int}
    if not isinstance(items, list) or not all(
            isinstance(d, dict) and all(isinstance(d.get(k), t) for k, t in fields.items()) for d in items):
        raise ValueError(f"{DIAGNOSTICS_FILE} is not a list of {sorted(fields)} records")
    return [{k: d[k] for k in fields} for d in items]


def _warning_category(name: str) -> type[Warning]:
    """The warning class named ``module.Class`` (already imported), else UserWarning."""
    module, _, qualname = name.rpartition(".")
    category = getattr(sys.modules.get(module), qualname, None)
    return category if isinstance(category, type) and issubclass(category, Warning) else UserWarning


def parse_signature(signature: dict) -> dict[str, ArgSpec]:
    """``{"a": "f16[:,:]", "n": "i32"}`` -> ArgSpecs (``*f16`` means a 2-D array too).
    Element types are spelled like ours ("f16") or like numpy's ("float16")."""
    specs = {}
    for name, text in signature.items():
        if isinstance(text, ArgSpec):
            specs[name] = text
            continue
        if not isinstance(text, str):
            raise UsageError(f"signature of {name!r}: expected a string such as {_SPELLINGS}, got {text!r}")
        text = text.strip()
        if text.endswith("]") and "[" in text:
            dtype, dims = text[:-1].split("[", 1)
            specs[name] = _array_signature(name, _element_type(name, dtype.strip()), dims)
        elif text.startswith("*"):
            specs[name] = ArgSpec("array", _element_type(name, text[1:].strip()), 2)
        else:
            specs[name] = ArgSpec("scalar", _element_type(name, text))
            if specs[name].dtype in FP8_TYPES:
                raise UsageError(f"signature of {name!r}: an fp8 ({text}) scalar parameter is not supported; pass "
                                 f"the value as f32 or f16 (fp8 is an array element type)")
    return specs


_SPELLINGS = "'f16[:,:]' or '*f16' (a 2-D array), 'f16[:,20]' (rows of 20 elements), 'i32' (a scalar)"


def _array_signature(param: str, elem: str, dims: str) -> ArgSpec:
    """The ArgSpec of ``elem[dims]``: one ``:`` per dimension; the last may be a number,
    the row length, which makes the kernel specialised for narrow rows when 2D block
    messages cannot address them (``rows_need_per_lane``, as a launch with such an array
    would)."""
    if not dims.strip():
        return ArgSpec("array", elem, 0)
    parts = [d.strip() for d in dims.split(",")]
    last = parts[-1]
    if any(d != ":" for d in parts[:-1]) or not (last == ":" or last.isdigit()):
        raise UsageError(f"signature of {param!r}: dimensions {dims!r} must be ':' each, the last may be a row "
                         f"length; legal spellings are {_SPELLINGS}")
    narrow = last.isdigit() and len(parts) > 1 and rows_need_per_lane(int(last), ELEMENT_TYPES[elem][1])
    return ArgSpec("array", elem, len(parts), spec=NARROW if narrow else "")


def _element_type(param: str, text: str) -> str:
    """Our element-type name for ``text``: ours ("f16") or numpy's ("float16")."""
    if text in ELEMENT_TYPES:
        return text
    for elem, (numpy_name, _) in ELEMENT_TYPES.items():
        if text == numpy_name:
            return elem
    legal = ", ".join(f"{elem} ({numpy_name})" for elem, (numpy_name, _) in ELEMENT_TYPES.items())
    raise UsageError(f"signature of {param!r}: unknown element type {text!r}; legal spellings are {_SPELLINGS} "
                     f"with an element type among {legal}")


def stage_names(target: str, isa: bool = False) -> list[str]:
    """The stages a compile for ``target`` runs, in order: the keys of
    ``CompiledKernel.timings`` (``isa``: the machine code is built too)."""
    resolved = compile_target(target)
    return stage_log.stage_names(resolved.gpu.name, interpret=resolved.interpret, isa=isa and not resolved.emulate)


def compile_kernel(fn, args: dict[str, ArgSpec], constants: dict, target: "str | catalog.CompileTarget",
                   isa: bool = False, dump: str | None = None, stage_texts: bool = False,
                   options: LaunchOptions = NO_OPTIONS) -> CompiledKernel:
    """Compile ``fn`` for ``target``; errors are CompilationErrors at the user's line.
    ``options`` are the launch's compile options (launch_options.py): ``num_stages``
    goes to the lowering; a ``num_warps`` other than the subgroup count of a kernel with
    wg_maps is a LaunchError before any SPIR-V exists, and a kernel without wg_map runs
    in subgroup 0 of ``num_warps`` (pass ``xetile-one-working-subgroup``, with a warning).
    ``asm`` holds the lowering stages' MLIR texts only with ``stage_texts`` (:func:`compile`
    asks for them; a ``@jit`` compile does not, as a kernel from its disk cache has none).

    The compiler's own warnings are issued at the user's line (:func:`issue`) and kept
    in ``diagnostics``, so that a cache hit can repeat them."""
    log = stage_log.StageLog(dump)
    with collector_paused(), log.progress(getattr(fn, "__name__", "kernel"), target):
        return _compile_kernel(fn, args, constants, target, isa, log, stage_texts, options)


_PAUSES = {"count": 0, "resume": False}
_PAUSE_LOCK = threading.Lock()


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for the ``with`` body (unless it already
    was), then one collection of the youngest generation.  A compile makes ~100k
    objects in cycles (xDSL IR: ops, blocks, uses), which set off 15-45 collections per
    compile, a full one every tenth, each walking the whole process's heap: 25-50 ms of
    CPU of a GEMM compile in a process that had compiled others, more in a
    process with a big heap.  Paused, they cost one collection of the compile's own
    objects, 6-10 ms.  Nested and concurrent compiles share one pause (a count)."""
    with _PAUSE_LOCK:
        if _PAUSES["count"] == 0:
            _PAUSES["resume"] = gc.isenabled()
            gc.disable()
        _PAUSES["count"] += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSES["count"] -= 1
            resume = _PAUSES["count"] == 0 and _PAUSES["resume"]
            if resume:
                gc.enable()
        if resume:
            gc.collect(0)


def _compile_kernel(fn, args: dict[str, ArgSpec], constants: dict, target, isa: bool,
                    log: stage_log.StageLog, stage_texts: bool, options: LaunchOptions = NO_OPTIONS) -> CompiledKernel:
    resolved = compile_target(target)   # a name (@jit), or compile()'s CompileTarget
    gpu, emulate, target = resolved.gpu, resolved.emulate, resolved.name
    src = KernelSource.of(fn)
    stats["compiles"] += 1
    if target != "interpret":
        spirv_emit.start_emitter()      # its start-up overlaps this compile (spirv_emit.py)
    try:
        with log.timed("frontend"):
            module, written = frontend.build_module(fn, args, constants, gpu, src)
        log.after_module("frontend", module)
        if target == "interpret":
            wg_to_sg.check_undistributed_subgroup_tiles(module, gpu)  # the compiled flavours' limit
            return CompiledKernel(src.name, target, KernelABI(src.name), {"xetile": dialects.print_module(module)},
                                  log.timings, dumps=log.dumps)
        xtdebug.reject_debug_ops(module)
        asm, diagnostics = _lower_with_located_warnings(src, module, gpu, log, stage_texts, options.num_stages,
                                                        options.num_warps)
        llvm_text, abi = _generate(log, module, gpu, emulate, narrow_arrays(args))
        check_num_subgroups(src.name, options.num_warps, abi.workgroup_size // abi.subgroup_size, options.spelled)
    except LoweringError as exc:
        raise at_user_line(src, exc) from (exc if debug_tracebacks() else None)
    except CompilationError as exc:
        if debug_tracebacks():
            raise
        raise exc.with_traceback(None) from None  # the user's mistake: no compiler frames
    abi = _mark_written(abi, written)
    if narrow_arrays(args) and gpu.has_2d_block_io:
        abi.extra["per_lane_arrays"] = sorted(narrow_arrays(args))
    kernel = _finish(CompiledKernel(src.name, target, abi, asm, diagnostics=diagnostics), log, llvm_text, gpu,
                     emulate, isa)
    if "zebin" in kernel.asm:
        _warn_spill(src, kernel, gpu)
    return kernel


def _warn_spill(src: KernelSource, kernel: CompiledKernel, gpu) -> None:
    """A located warning (at the kernel's ``def``, kept with its diagnostics) when its final
    machine code still spills registers: the GRF mode is already the compiler's choice
    (:func:`_retry_in_large_grf`), so what is left to change is the user's tile sizes."""
    spilled = kernel.asm["zebin"].spill_size(kernel.abi.kernel_name)
    if not spilled:
        return
    large = gpu.large_grf_option in kernel.abi.extra.get("build_options", "").split()
    grfs = gpu.large_grf_count if large else gpu.grf_count
    message = (f"kernel {src.name!r} spills {spilled} bytes of registers on {gpu.name} (built with {grfs} GRFs "
               f"= {grfs * gpu.grf_bytes // 1024} KiB per subgroup{', the largest register file' if large else ''}): "
               f"one subgroup's live tiles do not fit; make its blocks smaller (a smaller BM or BN: the rows and "
               f"columns of the tile_mma results and of the tiles live across the loop)")
    located = src.error(src.tree, message)   # the def line
    kernel.diagnostics.append({"category": f"{RegisterSpillWarning.__module__}.{RegisterSpillWarning.__qualname__}",
                               "message": str(RegisterSpillWarning.at(located)), "filename": located.filename,
                               "lineno": located.line})
    issue(kernel.diagnostics[-1])


def _generate(log: stage_log.StageLog, module, gpu, emulate: bool, narrow: frozenset = frozenset()):
    """(LLVM IR text, ABI) of the lowered ``module``: the ``llvm`` stage."""
    out = []
    with log.timed("llvm"):
        # a failure other than our own errors is a compiler bug: an InternalCompilerError at
        # the op codegen was emitting, like a lowering pass's, never a bare exception
        pipeline.run_guarded("llvm codegen", lambda: out.append(simt_to_llvm.generate(module, gpu, emulate, narrow)),
                             module)
    llvm_text, abi = out[0]
    log.after("llvm", lambda: llvm_text)
    return llvm_text, abi


def _finish(kernel: CompiledKernel, log: stage_log.StageLog, llvm_text: str, gpu, emulate: bool,
            isa: bool) -> CompiledKernel:
    """The stages after codegen, shared by :func:`compile` and :func:`compile_mlir`:
    build options, SPIR-V (validated) and, when asked, the machine code."""
    abi = kernel.abi
    abi.extra["build_options"] = gpu.build_options_for(bool(abi.extra.get("large_grf"))) if not emulate else ""
    kernel.asm["llvm"] = llvm_text
    kernel.asm["spirv"] = log.emit_spirv(spirv_emit.emit_spirv, llvm_text)
    if isa and not emulate:
        with log.timed("ocloc"):
            kernel.asm["isa"] = _isa(kernel, gpu)
    kernel.timings, kernel.dumps = log.timings, log.dumps
    return kernel


def narrow_arrays(args: dict[str, ArgSpec]) -> frozenset[str]:
    """The array parameters specialised as narrow (rows under ``NARROW_ROW_BYTES``): codegen
    reads and writes them with per-lane messages, as 2D block messages cannot address them."""
    return frozenset(name for name, spec in args.items() if spec.kind == "array" and spec.spec == NARROW)


def _lower_with_located_warnings(src: KernelSource, module, gpu, log: stage_log.StageLog,
                                 stage_texts: bool, num_stages: int | None = None, num_warps: int | None = None):
    """(``lower``'s stage texts, the compile's warnings): each pass's LoweringWarning is
    issued at the user's line (:func:`issue`; also when a later pass fails) and returned
    as a diagnostics record."""
    diagnostics = []
    try:
        with lowering_notes.collecting() as collected:
            asm = pipeline.lower(module, gpu, log.timings, log.pass_hook(), texts=stage_texts, num_stages=num_stages,
                                 num_warps=num_warps)
    finally:
        for note in collected:
            category = type(note).compiled_category
            located = at_user_line(src, note)
            diagnostics.append({"category": f"{category.__module__}.{category.__qualname__}",
                                "message": str(category.at(located)), "filename": located.filename,
                                "lineno": located.line})
            issue(diagnostics[-1])
    return asm, diagnostics


def _mark_written(abi: KernelABI, written: set[str]) -> KernelABI:
    params = tuple(
        replace(p, written=("*" in written or p.name in written)) if isinstance(p, ArrayParam) else p
        for p in abi.params)
    return KernelABI(**{**abi.__dict__, "params": params})


def _isa(kernel: CompiledKernel, gpu) -> str:
    """The kernel's machine code from the offline compiler.  A build that spills in the
    default register file is retried in the large one (the 256-GRF mode); when that spills
    less, the kernel adopts it: its build options, and so every later program build, ask
    for the large register file (``abi.extra["grf_retry"]`` records both spill sizes)."""
    zebin = ocloc.compile_spirv(kernel.spirv, gpu.ocloc_device, kernel.abi.extra.get("build_options", gpu.build_options))
    zebin = _retry_in_large_grf(kernel, gpu, zebin)
    kernel.asm["zebin"] = zebin
    return zebin.isa_text(kernel.abi.kernel_name)


def _retry_in_large_grf(kernel: CompiledKernel, gpu, zebin):
    """``zebin``, or the large-register-file build of the kernel when ``zebin`` spills and
    that build spills less (the register estimate of wg-to-sg counts only tile_mma
    accumulators, so element-wise and reduction tiles can still overflow 128 GRFs)."""
    name = kernel.abi.kernel_name
    spilled = zebin.spill_size(name)
    large_options = gpu.build_options_for(True)
    if not spilled or large_options == kernel.abi.extra.get("build_options", gpu.build_options):
        return zebin
    large = ocloc.compile_spirv(kernel.spirv, gpu.ocloc_device, large_options)
    if large.spill_size(name) >= spilled:
        return zebin
    kernel.abi.extra.update(large_grf=True, build_options=large_options,
                            grf_retry={"default_spill_bytes": spilled, "large_spill_bytes": large.spill_size(name)})
    return large


def compile(fn, signature: dict, constants: dict | None = None, target: str = "pvc",  # noqa: A001
            dump: str | None = None, num_warps: int | None = None, num_stages: int | None = None) -> CompiledKernel:
    """Compile a ``@jit`` kernel (or plain function) ahead of time and return it.

    ``signature`` gives each runtime parameter's type (``"f16[:,:]"`` for a 2-D array,
    ``"i32"`` for a scalar); ``constants`` the constexpr values; ``target`` one of "pvc",
    "bmg", "lnl", "ptl", "arc" (GPU code), "cpu"/"cpu-pvc"/"cpu-arc" (the same kernel with
    the GPU-only builtins defined, for the OpenCL CPU device).  ``.asm`` holds "xetile",
    "xegpu", "simt", "llvm" (text), "spirv" (bytes) and, for a GPU target when ocloc is
    installed, "isa".  ``.timings`` holds the seconds of each stage (:func:`stage_names`);
    ``dump="all"`` keeps the IR after every stage in ``.dumps``.  ``num_warps`` and
    ``num_stages`` are the launch options of that name (launch_options.py), checked the
    same way.
    """
    fn = getattr(fn, "fn", fn)
    if str(target).startswith("sm") and target in nv_targets.NV_TARGETS:   # the NVIDIA backend: stages xetile, nv, llvm, ptx (codegen/nvptx)
        return nv_compiler.compile_nv(fn, parse_signature(signature), dict(constants or {}), target,
                                      num_warps=num_warps, num_stages=num_stages)
    resolved = compile_target(target)
    _, options = split_options({k: v for k, v in (("num_warps", num_warps), ("num_stages", num_stages))
                                if v is not None}, ())
    name = getattr(fn, "__name__", "kernel")
    check_for_target(name, options, resolved.name, resolved.gpu.subgroup_size, resolved.gpu.max_workgroup_size)
    isa = not resolved.emulate and _ocloc_available()
    return compile_kernel(fn, parse_signature(signature), dict(constants or {}), resolved, isa=isa, dump=dump,
                          stage_texts=True, options=options)


def compile_mlir(text: str, target: str = "pvc", name: str = "<mlir>", dump: str | None = None) -> CompiledKernel:
    r"""Compile an XeTile module given as MLIR text (one ``func.func`` kernel whose array
    parameters are memrefs) through the same stages as :func:`compile` (its ``frontend``
    stage parses and verifies the text).

    Each memref parameter of rank R is passed like a ``@jit`` array argument (pointer,
    R extents, R-1 strides), so :meth:`CompiledKernel.launch` takes numpy arrays.  The
    kernel is assumed to write every array.  Errors are :class:`LoweringError`\ s naming
    the op (there is no Python source to point at).  ``index`` scalars are passed as i64."""
    resolved = compile_target(target)
    if resolved.interpret:
        raise UsageError("compile_mlir compiles; run MLIR text in the interpreter with "
                         "xetile_dsl.interpreter.interpret(parse_module(text), grid, args)")
    gpu, emulate = resolved.gpu, resolved.emulate
    log = stage_log.StageLog(dump)
    with log.timed("frontend"):
        module = dialects.parse_module(text, name)
        module.verify()
    log.after_module("frontend", module)
    kernel_name = next(op.sym_name.data for op in module.ops if op.name == "func.func")
    asm = pipeline.lower(module, gpu, log.timings, log.pass_hook())
    llvm_text, abi = _generate(log, module, gpu, emulate)
    params = tuple(ScalarParam(p.name, "i64") if p.kind == "scalar" and p.dtype == "index" else p for p in abi.params)
    abi = KernelABI(**{**abi.__dict__, "params": params})
    kernel = CompiledKernel(kernel_name, target, abi, asm)
    return _finish(kernel, log, llvm_text, gpu, emulate, isa=not emulate and _ocloc_available())


def _ocloc_available() -> bool:
    try:
        ocloc.find_ocloc()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no ISA"
        return False


_VERSION_HASH: str | None = None


def compiler_version() -> str:
    """A hash of everything besides the kernel that shapes what it compiles to: the
    compiler's own sources (:func:`sources_stamp`: each named by path, size and
    modification time, as Python's own bytecode cache checks them, so that a cached
    launch reads no source) and :func:`component_versions`: the compiler's part of every
    cache key (runtime/cache_key.py)."""
    global _VERSION_HASH
    if _VERSION_HASH is None:
        h = hashlib.sha256(sources_stamp(os.path.dirname(os.path.abspath(__file__))).encode())
        h.update(component_versions().encode())
        _VERSION_HASH = h.hexdigest()[:16]
    return _VERSION_HASH


def sources_stamp(root: str) -> str:
    """One line per ``.py`` file under ``root`` (symbolic links to folders are not
    followed): its path relative to ``root``, size and modification time in ns, sorted.
    An edited, added, removed or renamed source changes it; a warm first launch pays one
    ``scandir`` per folder and one ``stat`` per file."""
    lines: list[str] = []
    _stamp_folder(root, "", lines)
    lines.sort()
    return "".join(lines)


def _stamp_folder(folder: str, prefix: str, lines: list[str]) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                if not entry.is_symlink():
                    _stamp_folder(entry.path, f"{prefix}{entry.name}{os.sep}", lines)
            elif entry.name.endswith(".py"):
                st = entry.stat()
                lines.append(f"{prefix}{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n")


def component_versions() -> str:
    """The versions of the other programs a compiled kernel comes out of: Python (its
    ``ast`` and float formatting), xDSL (IR, printing, passes), llvmlite and the LLVM it
    bundles (LLVM IR parsing and the SPIR-V backend), numpy (constant folding).

    LLVM is named by the library llvmlite loads (its size and modification time), read
    without loading it: a launch served by the cache need not load LLVM at all."""
    return json.dumps({"python": f"{platform.python_implementation()} {sys.version}", "xdsl": _xdsl_version(),
                       "llvmlite": str(llvmlite.__version__), "llvm": _llvm_library_identity(),
                       "numpy": np.__version__}, sort_keys=True)


def _xdsl_version() -> str:
    """xDSL's version, from the name of its ``xdsl-<version>.dist-info`` folder beside the
    package when there is one: ``xdsl.__version__`` asks importlib.metadata, whose import
    and search cost a warm process ~80 ms of its first launch."""
    found = _names_in(os.path.dirname(os.path.dirname(xdsl.__file__)), "xdsl-", ".dist-info")
    if len(found) == 1:
        return found[0][len("xdsl-"):-len(".dist-info")]
    return str(xdsl.__version__)


def _llvm_library_identity() -> list:
    """[file name, bytes, mtime] of each LLVM library in llvmlite's binding folder."""
    binding = os.path.join(os.path.dirname(llvmlite.__file__), "binding")
    found = []
    for name in _names_in(binding, "libllvmlite", ""):
        st = os.stat(os.path.join(binding, name))
        found.append([name, st.st_size, int(st.st_mtime)])
    return found


def _names_in(folder: str, prefix: str, suffix: str) -> list[str]:
    """The sorted names in ``folder`` with ``prefix`` and ``suffix`` (a glob without its
    pattern compile: a warm first launch pays every one); [] if it is missing."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(prefix) and n.endswith(suffix) and len(n) >= len(prefix + suffix))


def to_xetile(fn, signature: dict, constants: dict | None = None, target: str = "pvc"):
    """The XeTile module of ``fn`` (a ``@jit`` kernel or a plain function) for a signature
    such as ``{"a": "f16[:,:]", "n": "i32"}``; ``target`` is a GPU target (pvc, bmg, lnl, ptl, arc) or a cpu alias."""
    fn = getattr(fn, "fn", fn)
    gpu = compile_target(target).gpu
    return frontend.build_module(fn, parse_signature(signature), dict(constants or {}), gpu)[0]
