"""Tiny hand-written SPIR-V kernels for runtime tests, built with llvmlite.

They follow the kernel ABI (runtime/abi.py): an array parameter of rank R becomes a
``ptr addrspace(1)``, R ``i64`` extents and R-1 ``i64`` outer strides in elements.
"""
from __future__ import annotations

import functools

_HEADER = """
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1"
target triple = "spirv64-unknown-unknown"
declare spir_func i64 @_Z12get_group_idj(i32)
declare spir_func i64 @_Z12get_local_idj(i32)
declare spir_func i64 @_Z14get_local_sizej(i32)
"""

#: out[z, r, c] = z*s0 + r*s1 + c, with z = group_id(2), r = group_id(1),
#: c = group_id(0) * local_size(0) + local_id(0).  Checks strides and the grid mapping.
FILL3D = """
define spir_kernel void @fill3d(ptr addrspace(1) %out, i64 %d0, i64 %d1, i64 %d2, i64 %s0, i64 %s1) {
entry:
  %z = call spir_func i64 @_Z12get_group_idj(i32 2)
  %r = call spir_func i64 @_Z12get_group_idj(i32 1)
  %g = call spir_func i64 @_Z12get_group_idj(i32 0)
  %l = call spir_func i64 @_Z12get_local_idj(i32 0)
  %wg = call spir_func i64 @_Z14get_local_sizej(i32 0)
  %gw = mul i64 %g, %wg
  %c = add i64 %gw, %l
  %inz = icmp ult i64 %z, %d0
  %inr = icmp ult i64 %r, %d1
  %inc = icmp ult i64 %c, %d2
  %a = and i1 %inz, %inr
  %in = and i1 %a, %inc
  br i1 %in, label %body, label %exit
body:
  %zo = mul i64 %z, %s0
  %ro = mul i64 %r, %s1
  %zr = add i64 %zo, %ro
  %idx = add i64 %zr, %c
  %v = trunc i64 %idx to i32
  %p = getelementptr i32, ptr addrspace(1) %out, i64 %idx
  store i32 %v, ptr addrspace(1) %p
  br label %exit
exit:
  ret void
}
"""

#: y[r, c] = alpha * x[r, c] + y[r, c] + beta  (x read only, f32; alpha f32, beta i32)
AXPY2D = """
define spir_kernel void @axpy2d(ptr addrspace(1) %x, i64 %xr, i64 %xc, i64 %xs,
                                ptr addrspace(1) %y, i64 %yr, i64 %yc, i64 %ys,
                                float %alpha, i32 %beta) {
entry:
  %r = call spir_func i64 @_Z12get_group_idj(i32 1)
  %g = call spir_func i64 @_Z12get_group_idj(i32 0)
  %l = call spir_func i64 @_Z12get_local_idj(i32 0)
  %wg = call spir_func i64 @_Z14get_local_sizej(i32 0)
  %gw = mul i64 %g, %wg
  %c = add i64 %gw, %l
  %inr = icmp ult i64 %r, %yr
  %inc = icmp ult i64 %c, %yc
  %in = and i1 %inr, %inc
  br i1 %in, label %body, label %exit
body:
  %xo = mul i64 %r, %xs
  %xi = add i64 %xo, %c
  %yo = mul i64 %r, %ys
  %yi = add i64 %yo, %c
  %xp = getelementptr float, ptr addrspace(1) %x, i64 %xi
  %yp = getelementptr float, ptr addrspace(1) %y, i64 %yi
  %xv = load float, ptr addrspace(1) %xp
  %yv = load float, ptr addrspace(1) %yp
  %ax = fmul float %alpha, %xv
  %s = fadd float %ax, %yv
  %bf = sitofp i32 %beta to float
  %res = fadd float %s, %bf
  store float %res, ptr addrspace(1) %yp
  br label %exit
exit:
  ret void
}
"""


@functools.lru_cache(maxsize=None)
def build_spirv(body: str) -> bytes:
    """Compile one kernel (LLVM IR text) to a SPIR-V binary with llvmlite."""
    # The project's emitter: it validates the module and works around LLVM 22's
    # duplicate-id bug, which otherwise makes the CPU runtime crash on a later build.
    from xetile_dsl.codegen.spirv.translate import emit_spirv

    return emit_spirv(_HEADER + body)
