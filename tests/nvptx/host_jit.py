"""LLVM IR compiled for this CPU (llvmlite's MCJIT): how the NVIDIA tests run the parts of
emitted code that need no GPU (integer predicates, shared-memory exchanges with their
barriers dropped, libdevice math)."""
from __future__ import annotations

import llvmlite.binding as llvm


def host_engine(text: str):
    """The execution engine of the module ``text`` (no target triple of its own) for this
    CPU, its functions compiled; keep it alive while calling them."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(text)
    module.triple = llvm.get_process_triple()
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    return engine
