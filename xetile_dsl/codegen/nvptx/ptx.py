"""LLVM IR -> PTX with llvmlite's NVPTX backend (target triple nvptx64-nvidia-cuda), and
the kernel's LLVM module with its NVVM annotations."""
from __future__ import annotations

import functools

import llvmlite.binding as llvm
from llvmlite import ir

from . import libdevice

TRIPLE = "nvptx64-nvidia-cuda"


def new_module(name: str) -> ir.Module:
    module = ir.Module(name=name)
    module.triple = TRIPLE
    return module


def mark_kernel(module: ir.Module, fn: ir.Function, threads: int, grid_constants: list[int] = ()) -> None:
    """``nvvm.annotations``: ``fn`` is a kernel entry of at most ``threads`` threads a block;
    its byval parameters at ``grid_constants`` (0-based) are read where they are (their
    address is the parameter's, ``cvta.param``: TMA's tensor maps) rather than copied."""
    i32 = ir.IntType(32)
    kernel = module.add_metadata([fn, ir.MetaDataString(module, "kernel"), ir.Constant(i32, 1)])
    ntid = module.add_metadata([fn, ir.MetaDataString(module, "maxntidx"), ir.Constant(i32, threads)])
    annotations = module.add_named_metadata("nvvm.annotations")
    annotations.add(kernel)
    annotations.add(ntid)
    if grid_constants:
        indices = module.add_metadata([ir.Constant(i32, i + 1) for i in grid_constants])
        annotations.add(module.add_metadata([fn, ir.MetaDataString(module, "grid_constant"), indices]))


@functools.lru_cache(maxsize=None)
def _machine(arch: str, features: str):
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=features, opt=3)


def to_ptx(llvm_text: str, arch: str, features: str) -> str:
    """The PTX of ``llvm_text`` for ``arch`` (``sm_90``), libdevice linked where it calls
    that (:mod:`.libdevice`), optimised at -O3 first."""
    module = llvm.parse_assembly(llvm_text)
    module.verify()
    libdevice.link(module)
    machine = _machine(arch, features)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(machine, pto)
    pb.getModulePassManager().run(module, pb)
    return machine.emit_assembly(module)
