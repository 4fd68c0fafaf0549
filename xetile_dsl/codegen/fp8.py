"""fp8 (OCP e4m3fn and e5m2) <-> f32 as integer code on the element bits.

No target we compile for has an fp8 type in SPIR-V (nor fp8 DPAS), so an fp8 element
travels as its byte (``llvm_types``) and ``arith.extf`` / ``arith.truncf`` of fp8 become
the integer operations below (docs/decisions/024-fp8-as-integer-code.md).  The CPU
device therefore runs the very code a GPU would.  Both directions go through f32: every
fp8 value is exact in f16, bf16 and f32, and f16/bf16 -> f32 is exact, so one rounding
happens, in :func:`from_f32`.

* fp8 -> f32 (exact): a normal code's exponent and mantissa are the f32 bits shifted,
  re-biased; a subnormal is ``mantissa * 2**(1 - bias - M)`` (an exact f32 product);
  e4m3fn's 0x7f/0xff are NaN, e5m2's exponent 31 is inf (mantissa 0) or NaN.
* f32 -> fp8, rounding to nearest even: a normal result is the f32 bits with the low
  ``23 - M`` mantissa bits rounded away (the carry runs into the exponent, up to the
  overflow code); a subnormal result is the 24-bit significand shifted right by the
  distance to fp8's subnormal unit, rounded the same way.  Past the largest finite
  value: NaN (e4m3fn, which has no inf) or inf (e5m2), as ml_dtypes does; NaN gives the
  format's quiet NaN code with the input's sign.  Saturation is the frontend's clamp.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type

I1, I8, I32 = ir.IntType(1), ir.IntType(8), ir.IntType(32)
F32 = ir.FloatType()


@dataclass(frozen=True)
class Fp8Format:
    mantissa: int      #: mantissa bits (M)
    bias: int
    max_code: int      #: the largest finite magnitude's code
    overflow: int      #: the code of a magnitude past it (NaN or inf)
    nan: int           #: the quiet NaN code ml_dtypes gives (sign added)
    has_inf: bool


E4M3FN = Fp8Format(mantissa=3, bias=7, max_code=0x7E, overflow=0x7F, nan=0x7F, has_inf=False)
E5M2 = Fp8Format(mantissa=2, bias=15, max_code=0x7B, overflow=0x7C, nan=0x7E, has_inf=True)


def fp8_format(t) -> Fp8Format:
    if isinstance(t, Float8E4M3FNType):
        return E4M3FN
    if isinstance(t, Float8E5M2Type):
        return E5M2
    raise TypeError(f"not an fp8 type: {t}")


def _like(lt: ir.Type, elem: ir.Type) -> ir.Type:
    return ir.VectorType(elem, lt.count) if isinstance(lt, ir.VectorType) else elem


def _k(lt: ir.Type, value) -> ir.Constant:
    if isinstance(lt, ir.VectorType):
        return ir.Constant(lt, [ir.Constant(lt.element, value)] * lt.count)
    return ir.Constant(lt, value)


def to_f32(b: ir.IRBuilder, x: ir.Value, fmt: Fp8Format) -> ir.Value:
    """The f32 value of the fp8 bits ``x`` (i8 scalar or vector); exact."""
    i32t, f32t = _like(x.type, I32), _like(x.type, F32)
    m = fmt.mantissa
    code = b.zext(x, i32t)
    sign = b.shl(b.and_(code, _k(i32t, 0x80)), _k(i32t, 24))
    mag = b.and_(code, _k(i32t, 0x7F))
    normal = b.add(b.shl(mag, _k(i32t, 23 - m)), _k(i32t, (127 - fmt.bias) << 23))
    mant = b.and_(mag, _k(i32t, (1 << m) - 1))
    unit = 2.0 ** (1 - fmt.bias - m)
    sub = b.bitcast(b.fmul(b.sitofp(mant, f32t), _k(f32t, unit)), i32t)
    bits = b.select(b.icmp_unsigned("<", mag, _k(i32t, 1 << m)), sub, normal)
    if fmt.has_inf:   # exponent all ones: inf (mantissa 0) or NaN
        special = b.icmp_unsigned(">=", mag, _k(i32t, 0x7F & ~((1 << m) - 1)))
        inf_nan = b.select(b.icmp_unsigned("==", mant, _k(i32t, 0)), _k(i32t, 0x7F800000), _k(i32t, 0x7FC00000))
        bits = b.select(special, inf_nan, bits)
    else:             # only 0x7f (and 0xff) is NaN
        bits = b.select(b.icmp_unsigned("==", mag, _k(i32t, 0x7F)), _k(i32t, 0x7FC00000), bits)
    return b.bitcast(b.or_(bits, sign), f32t)


def _round_shift(b: ir.IRBuilder, v: ir.Value, shift: ir.Value) -> ir.Value:
    """``v >> shift`` rounded to nearest even (``v`` non-negative, 1 <= shift <= 31)."""
    one = _k(v.type, 1)
    half_less = b.sub(b.shl(one, b.sub(shift, one)), one)
    odd = b.and_(b.lshr(v, shift), one)
    return b.lshr(b.add(v, b.add(half_less, odd)), shift)


def from_f32(b: ir.IRBuilder, x: ir.Value, fmt: Fp8Format) -> ir.Value:
    """The fp8 bits (i8) nearest to f32 ``x``, ties to even; overflow as the format says."""
    i32t = _like(x.type, I32)
    m, k = fmt.mantissa, lambda v: _k(i32t, v)
    bits = b.bitcast(x, i32t)
    sign = b.and_(b.lshr(bits, k(24)), k(0x80))
    mag = b.and_(bits, k(0x7FFFFFFF))
    # normal results: round the low 23 - M bits away, re-bias (clamped: no i32 overflow)
    big = b.select(b.icmp_unsigned(">", mag, k(0x7F000000)), k(0x7F000000), mag)
    normal = b.sub(_round_shift(b, big, k(23 - m)), k((127 - fmt.bias) << m))
    # subnormal results: the significand over fp8's subnormal unit 2**(1 - bias - M)
    exp = b.lshr(mag, k(23))
    significand = b.or_(b.and_(mag, k(0x7FFFFF)), k(0x800000))
    dist = b.sub(k(151 - fmt.bias - m), exp)
    dist = b.select(b.icmp_signed(">", dist, k(31)), k(31), dist)
    sub = _round_shift(b, significand, dist)
    is_normal = b.icmp_unsigned(">=", mag, k((128 - fmt.bias) << 23))
    code = b.select(is_normal, normal, sub)
    code = b.select(b.icmp_signed(">", code, k(fmt.max_code)), k(fmt.overflow), code)
    code = b.select(b.icmp_unsigned(">", mag, k(0x7F800000)), k(fmt.nan), code)
    return b.trunc(b.or_(code, sign), _like(x.type, I8))
