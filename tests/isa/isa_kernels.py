"""Tiny hand-written SPIR-V kernels for proving the ISA instrument.

Written as LLVM IR text and turned into SPIR-V with llvmlite's SPIR-V backend, locally,
so these tests do not depend on xetile_dsl's own code generator.
"""
from __future__ import annotations

import llvmlite.binding as llvm

DATALAYOUT = ("e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512"
              "-v1024:1024-n8:16:32:64-G1")

#: PVC DPAS, f16 x f16 -> f32, M=8: (short8 a, int8 b, float8 acc).
PVC_DPAS = "_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_sDv8_iDv8_f"
#: DG2 DPAS, f16 x f16 -> f32, M=8: (int8 a, int8 b, float8 acc).
DG2_DPAS = "_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_iS_Dv8_f"
#: A misspelt DPAS name ("mda"), same length and signature as PVC_DPAS.
MISSPELT_DPAS = "_Z38intel_sub_group_f16_f16_matrix_mda_k16Dv8_sDv8_iDv8_f"

_options_set = False


def block2d_name(op: str, shape: str, data_suffix: str = "Pt") -> str:
    """Itanium-mangled ``intel_sub_group_2d_block_<op>_<shape>`` (reference §3.1)."""
    base = f"intel_sub_group_2d_block_{op}_{shape}"
    return f"_Z{len(base)}{base}PU3AS1viiiDv2_i{data_suffix}"


def _set_options_once() -> None:
    """Initialise LLVM and set the process-global SPIR-V options, once."""
    global _options_set
    if not _options_set:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        llvm.set_option("", "--spirv-ext=+SPV_INTEL_subgroups")
        _options_set = True


def emit_spirv(ir_text: str) -> bytes:
    """LLVM IR text -> SPIR-V binary via llvmlite's spirv64 target."""
    from xetile_dsl.codegen.spirv.translate import emit_spirv as project_emit

    return project_emit(ir_text)  # validated; re-emitted on LLVM 22's duplicate-id bug


def _module(decls: str, body: str, sg_size: int) -> str:
    """A module with one kernel ``k(a, b, c)`` over global pointers, subgroup size pinned."""
    return f"""
target datalayout = "{DATALAYOUT}"
target triple = "spirv64-unknown-unknown"
declare spir_func i32 @_Z22get_sub_group_local_idv()
{decls}
define spir_kernel void @k(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c) !intel_reqd_sub_group_size !0 {{
  %lid = call spir_func i32 @_Z22get_sub_group_local_idv()
  %l64 = zext i32 %lid to i64
{body}
  ret void
}}
!0 = !{{i32 {sg_size}}}
"""


def _dpas_body(dpas: str, a_type: str, a_value: str) -> str:
    """Load B per lane, call ``dpas`` on (A, B, 0) and store the float8 result per lane."""
    return f"""
  %bp = getelementptr <8 x i32>, ptr addrspace(1) %b, i64 %l64
  %bv = load <8 x i32>, ptr addrspace(1) %bp, align 32
  %r = call spir_func <8 x float> @{dpas}({a_type} {a_value}, <8 x i32> %bv, <8 x float> zeroinitializer)
  %cp = getelementptr <8 x float>, ptr addrspace(1) %c, i64 %l64
  store <8 x float> %r, ptr addrspace(1) %cp, align 32"""


def pvc_dpas_block2d(dpas: str = PVC_DPAS) -> bytes:
    """PVC SIMD16: A by 2D block read (16b, 8 rows x 16 columns), then DPAS ``dpas``."""
    read = block2d_name("read", "16b_8r16x1c")
    decls = f"""declare spir_func <8 x float> @{dpas}(<8 x i16>, <8 x i32>, <8 x float>)
declare spir_func void @{read}(ptr addrspace(1), i32, i32, i32, <2 x i32>, ptr)"""
    body = f"""
  %buf = alloca <8 x i16>, align 16
  call spir_func void @{read}(ptr addrspace(1) %a, i32 64, i32 16, i32 64, <2 x i32> zeroinitializer, ptr %buf)
  %av = load <8 x i16>, ptr %buf, align 16""" + _dpas_body(dpas, "<8 x i16>", "%av")
    return emit_spirv(_module(decls, body, 16))


def dg2_dpas() -> bytes:
    """DG2 SIMD8: A and B loaded per lane, DPAS with the ARC signature (int8 A)."""
    decls = f"declare spir_func <8 x float> @{DG2_DPAS}(<8 x i32>, <8 x i32>, <8 x float>)"
    body = """
  %ap = getelementptr <8 x i32>, ptr addrspace(1) %a, i64 %l64
  %av = load <8 x i32>, ptr addrspace(1) %ap, align 32""" + _dpas_body(DG2_DPAS, "<8 x i32>", "%av")
    return emit_spirv(_module(decls, body, 8))
