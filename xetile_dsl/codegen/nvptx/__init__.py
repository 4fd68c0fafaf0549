"""The NVIDIA backend's codegen: subgroup-level XeTile IR -> LLVM IR (NVVM intrinsics,
inline PTX) -> PTX.  :func:`xetile_dsl.nv_compiler.compile_nv` drives it; :mod:`.layouts` chooses the
warp layout of each tile value, :mod:`.emit` and :mod:`.warp_ops` emit it, :mod:`.ptx`
runs llvmlite's NVPTX backend."""
