"""The NVIDIA compile: the frontend's XeTile IR, the shared workgroup-to-subgroup
distribution, the warp layouts (stage ``nv``), LLVM IR with NVVM intrinsics and inline PTX
(stage ``llvm``) and PTX from llvmlite's NVPTX backend (stage ``ptx``).

Every stage is text in :attr:`NvKernel.asm`; the PTX is kept on disk under
``$XETILE_CACHE_DIR/nvptx``, keyed by the kernel's sources, signature, constants, the
target's PTX architecture and this backend's own sources."""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field

from . import knobs
from .dialects import make_context, print_module
from .errors import LoweringError
from .frontend.build import build_module
from .frontend.source import KernelSource, at_user_line
from .lowering.passes.wg_to_sg import XeTileWgToSg
from .targets.nvidia import NvTarget, nv_target
from .targets.target import PVC
from .codegen.nvptx.emit import KernelEmitter
from .codegen.nvptx.ptx import mark_kernel, new_module, to_ptx
from ._lazy import LazyModule

sass = LazyModule("xetile_dsl.tools.sass", globals())  # the SASS report (ptxas, nvdisasm): only when asked

#: threads of a one-warp program: the subgroup-level kernel's subgroup is the warp; a
#: GEMM whose values are all tile_mma fragments takes several warps (``NvKernel.threads``)
THREADS = 32


@dataclass
class NvKernel:
    """A kernel compiled for an NVIDIA target: its stages' texts and its parameters."""

    name: str
    target: NvTarget
    params: list            # (name, "array" | scalar type)
    asm: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    #: threads a program (block) and the dynamic shared memory it needs, bytes
    threads: int = THREADS
    smem_bytes: int = 0
    #: the PTX ``.target`` the code needs: the target's, or its ``wgmma_ptx_arch`` (sm_90a)
    #: where the GEMM runs wgmma
    ptx_arch: str = ""
    #: (array, box rows, box columns) of each tensor map the kernel takes after its other
    #: parameters (the wgmma GEMM's TMA fill, decision 051); the launcher makes them
    tensor_maps: list = field(default_factory=list)

    @property
    def ptx(self) -> str:
        return self.asm["ptx"]

    def report(self):
        """The static SASS report (tools/sass.py): ptxas's registers, stack, spills and
        shared memory, and each loop's own instructions by opcode (nvdisasm);
        ``print(k.report())`` shows a table, ``k.report().to_json()`` the same for tools."""
        return sass.report(self)


def lower_to_llvm(module, target: NvTarget, asm: dict, timings: dict, num_warps: int | None = None,
                  num_stages: int | None = None, tma_arrays: tuple = ()) -> tuple[str, list, str, KernelEmitter]:
    """(LLVM IR text, parameters, kernel name, emitter) of the frontend's ``module``;
    ``num_warps``/``num_stages`` the launch options (the warps of a program, the depth of
    the shared-memory ring), None for the emitter's own choice; ``tma_arrays`` the array
    parameters a tensor map can describe (the launch's check)."""
    start = time.perf_counter()
    # the shared distribution pass: a workgroup-level kernel's tiles become each subgroup's
    # (a warp of the program, ``gpu.subgroup_id`` its index; its exchanges through shared
    # local memory and barriers); a no-op on subgroup-level kernels
    XeTileWgToSg(target=PVC).apply(make_context(), module)
    func = next(op for op in module.ops if op.name == "func.func")
    llvm_module = new_module(func.sym_name.data)
    emitter = KernelEmitter(func, llvm_module, target, num_warps, num_stages, tma_arrays)
    fn = emitter.emit()
    asm["nv"] = print_module(module)
    if emitter.tensor_maps:   # the nv text alone keys the PTX cache: it names the maps
        asm["nv"] += f"// tensor maps {emitter.tensor_maps}\n"
    mark_kernel(llvm_module, fn, emitter.threads, emitter.grid_constants)
    timings["nv-lowering"] = time.perf_counter() - start
    return str(llvm_module), emitter.params, func.sym_name.data, emitter


def compile_nv(fn, args: dict, constants: dict, target: str | NvTarget = "sm90", num_warps: int | None = None,
               num_stages: int | None = None, tma_arrays: tuple = ()) -> NvKernel:
    """Compile ``fn`` (a ``@jit`` kernel's function) for an NVIDIA target; ``args`` are
    the frontend's ArgSpecs by parameter name.  ``num_warps`` (the warps of a program: a
    GEMM whose values are all tile_mma fragments splits its C tile over them) and
    ``num_stages`` (the shared-memory ring of its K loop; 1: no staging) are the launch
    options of those names.  ``tma_arrays`` names the array parameters the launch found a
    tensor map can describe (16-byte aligned base and row pitch, 16-bit elements): the
    wgmma GEMM fills its ring by TMA when it holds both of its operands' (decision 051)."""
    target = target if isinstance(target, NvTarget) else nv_target(target)
    src = KernelSource.of(fn)
    asm, timings = {}, {}
    start = time.perf_counter()
    module, _ = build_module(fn, args, constants, target, src)
    timings["frontend"] = time.perf_counter() - start
    asm["xetile"] = print_module(module)
    try:
        llvm_text, params, name, emitter = lower_to_llvm(module, target, asm, timings, num_warps, num_stages,
                                                         tuple(tma_arrays))
    except LoweringError as exc:
        raise at_user_line(src, exc) from None
    asm["llvm"] = llvm_text
    start = time.perf_counter()
    asm["ptx"] = cached_ptx(llvm_text, target, asm["nv"], emitter.ptx_arch)
    timings["ptx"] = time.perf_counter() - start
    return NvKernel(name, target, params, asm, timings, emitter.threads, emitter.smem_bytes, emitter.ptx_arch,
                    list(emitter.tensor_maps))


def _sources_stamp() -> str:
    here = os.path.join(os.path.dirname(__file__), "codegen", "nvptx")
    digest = hashlib.sha256()
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


def cached_ptx(llvm_text: str, target: NvTarget, lowered: str, arch: str | None = None) -> str:
    """The PTX of ``llvm_text``, from the disk cache when the same lowered module
    (``lowered``, the ``nv`` stage's text, whose LLVM IR this backend's sources determine)
    was built for this architecture before.  The key holds no LLVM text: a PTX built on
    one machine serves another whose llvmlite prints the same module differently."""
    arch = arch or target.ptx_arch
    key = hashlib.sha256(f"{arch}\0{target.ptx_features}\0{_sources_stamp()}\0{lowered}".encode())
    root = str(knobs.CACHE_DIR.get() or os.path.join(os.path.expanduser("~"), ".cache", "xetile_dsl"))
    path = os.path.join(root, "nvptx", f"{key.hexdigest()[:32]}-{arch}.ptx")
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        pass
    ptx = to_ptx(llvm_text, arch, target.ptx_features)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(ptx)
        os.replace(tmp, path)
    except OSError:
        pass
    return ptx
