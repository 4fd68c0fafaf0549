"""DPAS: ``intel_sub_group_<a>_<b>_matrix_mad_k<K>`` declarations and CPU emulation.

Per-lane types follow the Xe codegen reference §2.1, derived from the target's DPAS
table rather than from the chip's name: each lane holds ``K * bits(a) / N`` bits of
every row of A (16 on a 16-lane target -> ``short``, 32 on an 8-lane one -> ``int``),
and ``K * bits(b) / 32`` dwords of its column of B (always 8).

The emulation body (§2.4, §7) makes lane n compute column n of D: it fetches A's
elements from the lanes that hold them and accumulates ``C[m][n] + sum_k A[m][k] *
B[k][n]`` in f32 with fma, k ascending (integers: i32, wrapping mod 2^32).  The body is
straight-line: subgroup operations are convergent.  With more than one row, each lane's
whole A operand (its elements of every row) comes over in one ``sub_group_broadcast``
of a vector per source lane, and the rows are accumulated as one vector: K / (elements
per lane) broadcasts and K vector fmas instead of M * K shuffles and M * K scalar fmas.
The arithmetic per element is the same; the OpenCL CPU compiler builds it in about 30 %
less time (the DPAS body was most of a PVC GEMM's build: docs/decisions/004-emulated-builtins-on-the-cpu-runtime.md).

tf32 inputs are f32 words of which the matrix engine uses 1 + 8 + 10 bits; the
emulation first rounds every A and B element to tf32, to nearest even (the one
f32 -> tf32 conversion Intel specifies, ``OpRoundFToTF32INTEL`` of
SPV_INTEL_tensor_float32_conversion), exactly like the interpreter's ``round_tf32``.
Products of two tf32 values are exact in f32 (22 significant bits), so only the fma
accumulation rounds.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...dtypes import element
from .mangle import mangle, vec

I8, I16, I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
F16, F32 = ir.HalfType(), ir.FloatType()

#: accumulator name -> (Itanium code, LLVM element type); bf16 travels as short.
ACC_TYPES = {"f32": ("f", F32), "f16": ("Dh", F16), "bf16": ("s", I16), "i32": ("i", I32)}


@dataclass(frozen=True)
class DpasSignature:
    """Everything about one DPAS flavour's per-lane interface."""

    a_type: str
    b_type: str
    acc_type: str
    m: int
    k: int
    n: int  # subgroup size = columns of B/C/D
    a_lane_bits: int  # bits of one row of A held by each lane
    a_elem: ir.Type  # LLVM element type of the A operand
    a_count: int  # components of the A operand
    name: str
    fnty: ir.FunctionType

    @property
    def is_int(self) -> bool:
        return self.acc_type == "i32"


def _llvm_vec(elem: ir.Type, n: int) -> ir.Type:
    """OpenCL has no 1-vectors: one component is a scalar."""
    return elem if n == 1 else ir.VectorType(elem, n)


def dpas_signature(target, a_type: str, b_type: str, acc_type: str, m: int) -> DpasSignature:
    """The signature of DPAS ``a_type x b_type -> acc_type`` with ``m`` rows on ``target``."""
    cfg = target.dpas_for(a_type, b_type)
    if cfg is None:
        raise ValueError(f"target {target.name} has no DPAS for {a_type} x {b_type}; "
                         f"legal: {', '.join(target.legal_mma_inputs())}")
    if acc_type not in cfg.acc_types:
        raise ValueError(f"DPAS {a_type} x {b_type} on {target.name} accumulates in {cfg.acc_types}, not {acc_type}")
    if m not in cfg.m_values:
        raise ValueError(f"DPAS M must be one of {cfg.m_values}, got {m}")
    k, n = cfg.k, cfg.n
    a_lane_bits = k * element(a_type).bits // n
    if a_type == "tf32":
        # each lane holds half a row: float components each carry two rows (§2.4)
        a_code, a_elem, a_count = "f", F32, max(1, m * a_lane_bits // 32)
    else:
        unsigned = a_type == "u8"
        a_code = {16: "t" if unsigned else "s", 32: "j" if unsigned else "i"}[a_lane_bits]
        a_elem, a_count = ir.IntType(a_lane_bits), m
    b_dwords = k * element(b_type).bits // 32
    b_code, b_elem = ("f", F32) if b_type == "tf32" else ("j" if b_type == "u8" else "i", I32)
    acc_code, acc_elem = ACC_TYPES[acc_type]
    name = mangle(f"intel_sub_group_{a_type}_{b_type}_matrix_mad_k{k}",
                  [vec(a_count, a_code), vec(b_dwords, b_code), vec(m, acc_code)])
    acc_ty = _llvm_vec(acc_elem, m)
    fnty = ir.FunctionType(acc_ty, [_llvm_vec(a_elem, a_count), ir.VectorType(b_elem, b_dwords), acc_ty])
    return DpasSignature(a_type, b_type, acc_type, m, k, n, a_lane_bits, a_elem, a_count, name, fnty)


def build_dpas(bi, a_type: str, b_type: str, acc_type: str, m: int) -> ir.Function:
    """Declare (GPU) or define (emulation) the DPAS builtin in ``bi.module``."""
    sig = dpas_signature(bi.target, a_type, b_type, acc_type, m)
    if not bi.emulate:
        return bi.declare(sig.name, sig.fnty)
    fn = bi.define_internal(sig.name, sig.fnty, inline=False)
    _emit_body(bi, fn, sig)
    return fn


# --- emulation ------------------------------------------------------------------------
def _component(builder, value, i: int, count: int):
    return value if count == 1 else builder.extract_element(value, ir.Constant(I32, i))


def _emit_body(bi, fn: ir.Function, sig: DpasSignature) -> None:
    a, b, c = fn.args
    a.name, b.name, c.name = "a", "b", "acc"
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    if sig.m > 1 and sig.a_type != "tf32":
        _emit_row_vector_body(bi, builder, fn, sig)
        return
    acc = [_acc_in(builder, _component(builder, c, i, sig.m), sig.acc_type) for i in range(sig.m)]
    b_col = [_b_element(builder, b, kk, sig.b_type) for kk in range(sig.k)]
    fma = bi.declare_intrinsic("llvm.fma.f32", ir.FunctionType(F32, [F32, F32, F32]))
    for row in range(sig.m):
        for kk, a_val in enumerate(_a_row(bi, builder, a, row, sig)):
            if sig.is_int:
                acc[row] = builder.add(acc[row], builder.mul(a_val, b_col[kk]))
            else:
                acc[row] = builder.call(fma, [a_val, b_col[kk], acc[row]])
    result = [_acc_out(builder, v, sig.acc_type) for v in acc]
    if sig.m == 1:
        builder.ret(result[0])
        return
    out = ir.Constant(sig.fnty.return_type, None)
    for i, v in enumerate(result):
        out = builder.insert_element(out, v, ir.Constant(I32, i))
    builder.ret(out)


def _emit_row_vector_body(bi, builder, fn: ir.Function, sig: DpasSignature) -> None:
    """The body with the M rows as one vector (module docstring): for each source lane,
    its A elements of every row arrive in one broadcast; for each of its K columns,
    ``acc[0..M) = fma(A[0..M)[k], B[k][n], acc[0..M))``."""
    a, b, c = fn.args
    acc = _vector_to_wide(builder, c, sig.acc_type, sig.m) if sig.acc_type in ("f16", "bf16") else c
    bits = element(sig.a_type).bits
    per_lane = sig.a_lane_bits // bits
    words = sig.m * sig.a_lane_bits // 32
    packed = builder.bitcast(a, _llvm_vec(I32, words))
    broadcast = bi.declare(mangle("sub_group_broadcast", [vec(words, "j"), "j"]),
                           ir.FunctionType(packed.type, [packed.type, I32]))
    broadcast.attributes.add("convergent")
    fma = None if sig.is_int else bi.declare_intrinsic(f"llvm.fma.v{sig.m}f32", ir.FunctionType(acc.type, [acc.type] * 3))
    for lane in range(sig.k // per_lane):
        got = builder.call(broadcast, [packed, ir.Constant(I32, lane)])
        for f in range(per_lane):  # lower column index in the lower bits
            a_col = _vector_to_wide(builder, _a_column(builder, got, f, sig), sig.a_type, sig.m)
            b_val = _splat(builder, _b_element(builder, b, lane * per_lane + f, sig.b_type), sig.m)
            if sig.is_int:
                acc = builder.add(acc, builder.mul(a_col, b_val))
            else:
                acc = builder.call(fma, [a_col, b_val, acc])
    if sig.acc_type in ("f32", "i32"):
        builder.ret(acc)
        return
    out = ir.Constant(sig.fnty.return_type, None)
    for i in range(sig.m):
        out = builder.insert_element(out, _acc_out(builder, builder.extract_element(acc, ir.Constant(I32, i)),
                                                   sig.acc_type), ir.Constant(I32, i))
    builder.ret(out)


def _a_column(builder, got, f: int, sig: DpasSignature):
    """Element ``f`` of every row of one lane's A operand ``got`` (i32 words), as an
    <M x i8/i16> vector: one shufflevector where the operand fits a 16-element vector
    (SPIR-V's longest), else row by row."""
    bits = element(sig.a_type).bits
    per_lane = sig.a_lane_bits // bits
    column_ty = ir.VectorType(ir.IntType(bits), sig.m)
    if sig.m * per_lane <= 16:
        elems = builder.bitcast(got, ir.VectorType(ir.IntType(bits), sig.m * per_lane))
        return builder.shuffle_vector(elems, elems, ir.Constant(ir.VectorType(I32, sig.m),
                                                                [r * per_lane + f for r in range(sig.m)]))
    column = ir.Constant(column_ty, None)
    for r in range(sig.m):
        at = r * sig.a_lane_bits + f * bits
        word = builder.extract_element(got, ir.Constant(I32, at // 32))
        field = builder.lshr(word, ir.Constant(I32, at % 32)) if at % 32 else word
        column = builder.insert_element(column, builder.trunc(field, ir.IntType(bits)), ir.Constant(I32, r))
    return column


def _vector_to_wide(builder, bits_vec, elem: str, n: int):
    """A vector of ``n`` ``elem`` values (as their bits, or f16 as half) widened for
    accumulation: <n x f32> for floating elements, <n x i32> for integers."""
    wide_f, wide_i = ir.VectorType(F32, n), ir.VectorType(I32, n)
    if elem == "f16":
        return builder.fpext(builder.bitcast(bits_vec, ir.VectorType(F16, n)), wide_f)
    if elem == "bf16":
        shifted = builder.shl(builder.zext(builder.bitcast(bits_vec, ir.VectorType(I16, n)), wide_i),
                              ir.Constant(wide_i, [16] * n))
        return builder.bitcast(shifted, wide_f)
    if elem == "i8":
        return builder.sext(bits_vec, wide_i)
    return builder.zext(bits_vec, wide_i)  # u8


def _splat(builder, value, n: int):
    vector = builder.insert_element(ir.Constant(ir.VectorType(value.type, n), None), value, ir.Constant(I32, 0))
    return builder.shuffle_vector(vector, vector, ir.Constant(ir.VectorType(I32, n), [0] * n))


def _a_row(bi, builder, a, row: int, sig: DpasSignature) -> list:
    """``A[row][0..K)`` as f32 (or i32), shuffled in from the lanes that hold them."""
    if sig.a_type == "tf32":
        # component i of lane n = A[2i + (n >= K)][n mod K]  (§2.4)
        comp = _component(builder, a, row // 2, sig.a_count)
        word = builder.bitcast(comp, I32)
        return [_round_tf32(builder, bi.shuffle_i32(builder, word, ir.Constant(I32, (row % 2) * sig.k + kk)))
                for kk in range(sig.k)]
    bits = element(sig.a_type).bits
    per_lane = sig.a_lane_bits // bits  # consecutive elements of the row each lane holds
    comp = _component(builder, a, row, sig.a_count)
    word = comp if sig.a_lane_bits == 32 else builder.zext(comp, I32)
    values = []
    for lane in range(sig.k // per_lane):
        got = bi.shuffle_i32(builder, word, ir.Constant(I32, lane))
        for f in range(per_lane):  # lower column index in the lower bits
            values.append(_unpack(builder, got, f * bits, bits, sig.a_type))
    return values


def _b_element(builder, b, kk: int, b_type: str):
    """``B[kk][n]`` of this lane's VNNI-packed column, as f32 (or i32)."""
    if b_type == "tf32":
        return _round_tf32(builder, builder.bitcast(builder.extract_element(b, ir.Constant(I32, kk)), I32))
    bits = element(b_type).bits
    per_dword = 32 // bits
    dword = builder.extract_element(b, ir.Constant(I32, kk // per_dword))
    return _unpack(builder, dword, (kk % per_dword) * bits, bits, b_type)


def _unpack(builder, word, shift: int, bits: int, elem: str):
    """Field ``[shift, shift+bits)`` of i32 ``word``, widened for accumulation."""
    field = builder.lshr(word, ir.Constant(I32, shift)) if shift else word
    field = builder.trunc(field, ir.IntType(bits))
    if elem == "f16":
        return builder.fpext(builder.bitcast(field, F16), F32)
    if elem == "bf16":
        return _bf16_to_f32(builder, field)
    if elem == "i8":
        return builder.sext(field, I32)
    return builder.zext(field, I32)  # u8


def _bf16_to_f32(builder, bits16):
    """bf16 is the top half of an f32: exact."""
    return builder.bitcast(builder.shl(builder.zext(bits16, I32), ir.Constant(I32, 16)), F32)


def _round_tf32(builder, bits):
    """The f32 whose i32 ``bits`` are given, rounded to tf32 (10 mantissa bits), to nearest
    even; infinities and NaNs pass unchanged (a carry out of the mantissa correctly
    bumps the exponent, up to infinity)."""
    lsb = builder.and_(builder.lshr(bits, ir.Constant(I32, 13)), ir.Constant(I32, 1))
    rounded = builder.add(bits, builder.add(lsb, ir.Constant(I32, 0xFFF)))
    rounded = builder.and_(rounded, ir.Constant(I32, ~0x1FFF & 0xFFFFFFFF))
    exponent = builder.and_(bits, ir.Constant(I32, 0x7F800000))
    finite = builder.icmp_unsigned("!=", exponent, ir.Constant(I32, 0x7F800000))
    return builder.bitcast(builder.select(finite, rounded, bits), F32)


def _f32_to_bf16(builder, value):
    """Round to nearest even; NaN stays a (quiet) NaN."""
    bits = builder.bitcast(value, I32)
    lsb = builder.and_(builder.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = builder.add(bits, builder.add(lsb, ir.Constant(I32, 0x7FFF)))
    rounded = builder.trunc(builder.lshr(rounded, ir.Constant(I32, 16)), I16)
    quiet_nan = builder.trunc(builder.lshr(builder.or_(bits, ir.Constant(I32, 0x400000)), ir.Constant(I32, 16)), I16)
    is_nan = builder.fcmp_unordered("uno", value, value)
    return builder.select(is_nan, quiet_nan, rounded)


def _acc_in(builder, value, acc_type: str):
    if acc_type == "f16":
        return builder.fpext(value, F32)
    if acc_type == "bf16":
        return _bf16_to_f32(builder, value)
    return value  # f32 or i32


def _acc_out(builder, value, acc_type: str):
    if acc_type == "f16":
        return builder.fptrunc(value, F16)  # one rounding, RNE (§7)
    if acc_type == "bf16":
        return _f32_to_bf16(builder, value)
    return value
