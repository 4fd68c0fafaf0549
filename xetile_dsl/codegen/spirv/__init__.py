"""LLVM IR text -> SPIR-V binary: :func:`~.translate.emit_spirv` (the one entry point),
the LLVM SPIR-V backend it drives in a separate process (:mod:`.backend`, a script that
imports llvmlite only), and the linker that joins a kernel's module with the emulated
builtins' modules (:mod:`.link`).
"""
