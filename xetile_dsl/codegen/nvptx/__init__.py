"""The NVIDIA backend's codegen: subgroup-level XeTile IR -> LLVM IR (NVVM intrinsics,
inline PTX) -> PTX.  :func:`.driver.compile_nv` is the entry; :mod:`.layouts` chooses the
warp layout of each tile value, :mod:`.emit` and :mod:`.warp_ops` emit it, :mod:`.ptx`
runs llvmlite's NVPTX backend."""
