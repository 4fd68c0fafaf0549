"""Codegen: per-lane (SIMT) XeGPU IR -> LLVM IR -> SPIR-V.

* :mod:`.simt_to_llvm` is the driver: one kernel function per module, the kernel's
  arguments and ABI, and each op handed to its emitter;
* ``emit/``: the per-op emitters, registered by op class in ``emit.EMITTERS``;
* ``builtins/``: the GPU builtin functions the emitters call (declared for a GPU,
  defined from their specification for the CPU device);
* ``spirv/``: LLVM IR text to a SPIR-V binary;
* small helpers shared by the driver and the emitters: :mod:`.llvm_types` (IR types ->
  LLVM types), :mod:`.tdesc` (a 2-D descriptor as LLVM values), :mod:`.coordinates`
  (32- or 64-bit tile coordinates), :mod:`.latch_order` (the order of a loop latch's
  instructions, after emission).
"""
