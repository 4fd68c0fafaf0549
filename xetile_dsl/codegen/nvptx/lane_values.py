"""The values of the NVPTX emitter and their element-wise arithmetic: a tile value is
one LLVM scalar per slot of its layout (:mod:`.layouts`), computed slot by slot."""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import (BFloat16Type, Float16Type, Float32Type, Float64Type, IndexType, IntegerType,
                                   VectorType)

from ...dialects.types import is_unsigned
from ...errors import LoweringError
from .. import fp8 as fp8_codes
from . import libdevice
from .layouts import Layout

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
GLOBAL = ir.PointerType(addrspace=1)


@dataclass
class Vec:
    """A tile value: its layout and one LLVM scalar per slot; ``elem`` the MLIR element."""

    layout: Layout
    elem: object
    slots: list
    #: 16-bit fragments read by ``ldmatrix``: the 32-bit registers that hold slots
    #: (2i, 2i + 1), low half first, which ``mma.sync`` takes as they are
    pairs: list | None = None


@dataclass
class Mem:
    """An array: pointer, extents, row stride (elements); an N-D parameter (N > 2) also
    keeps all its ``sizes`` and the ``strides`` of its leading dimensions (the last is 1),
    which ``memref.reinterpret_cast`` views (``q[z, h]``) read."""

    ptr: ir.Value
    rows: ir.Value
    cols: ir.Value
    stride: ir.Value
    elem: object
    sizes: tuple = ()
    strides: tuple = ()


@dataclass
class Tile:
    """A tile descriptor: the array and the (row, column) of its first element;
    ``transposed`` (an ``order = [0, 1]`` tile over a row-major array): tile element
    (r, c) is array element (col + c, row + r), so ``row`` counts the array's columns."""

    mem: Mem
    row: ir.Value
    col: ir.Value
    shape: tuple[int, int]
    transposed: bool = False


def is_bf16(t) -> bool:
    return isinstance(t, BFloat16Type)


def llvm_type(t, op=None) -> ir.Type:
    """The LLVM type of an MLIR scalar type (bf16 is carried as its 16 bits)."""
    if isinstance(t, VectorType):
        t = t.element_type
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, IntegerType):
        return ir.IntType(t.width.data)
    if isinstance(t, Float32Type):
        return F32
    if isinstance(t, Float16Type):
        return F16
    if isinstance(t, BFloat16Type):
        return I16
    if isinstance(t, Float64Type):
        return F64
    if is_fp8(t):       # carried as its 8 bits (tile_mma converts them: warp_ops.mma)
        return ir.IntType(8)
    raise LoweringError(f"nvptx: element type {t} is not supported on NVIDIA targets yet", op)


#: one fp8 value (the low byte of a 16-bit register; the high byte 0) to f16x2, whose low
#: half is its f16 value (exact: every e4m3 and e5m2 value is an f16): PTX ISA 7.8, sm_89+
_FP8_CVT = {"Float8E4M3FNType": "cvt.rn.f16x2.e4m3x2 $0, $1;", "Float8E5M2Type": "cvt.rn.f16x2.e5m2x2 $0, $1;"}


def fp8_to_f16(b: ir.IRBuilder, v: ir.Value, elem) -> ir.Value:
    """The f16 value of the fp8 ``elem`` bits ``v`` (i8), by the hardware's conversion."""
    reg = b.asm(ir.FunctionType(I32, [I16]), _FP8_CVT[elem.__class__.__name__], "=r,h", [b.zext(v, I16)], False)
    return b.bitcast(b.trunc(reg, I16), F16)


def is_fp8(t) -> bool:
    """Whether ``t`` is an fp8 type (e4m3fn or e5m2)."""
    return t.__class__.__name__ in ("Float8E4M3FNType", "Float8E5M2Type")


def elem_of(t):
    return t.element_type if isinstance(t, VectorType) else t


def is_float(t) -> bool:
    return isinstance(elem_of(t), (Float16Type, Float32Type, Float64Type, BFloat16Type))


def bf16_to_f32(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The f32 of a bf16's bits: the bits in the high half."""
    return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)


def f32_to_bf16(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """Round an f32 to bf16, to nearest even (``cvt.rn.bf16.f32``, sm_80)."""
    return b.asm(ir.FunctionType(I16, [F32]), "cvt.rn.bf16.f32 $0, $1;", "=h,f", [v], False)


def float_value(b, v, t):
    """An arithmetic value of element type ``t`` (bf16 widened to f32)."""
    return bf16_to_f32(b, v) if is_bf16(elem_of(t)) else v


def float_result(b, v, t):
    return f32_to_bf16(b, v) if is_bf16(elem_of(t)) else v


def joined(b: ir.IRBuilder, first: list, first_block, second: list, second_block) -> list:
    """One phi a pair: ``first[i]`` from ``first_block``, ``second[i]`` from
    ``second_block`` (the two arms of a branch, at their join)."""
    out = []
    for x, y in zip(first, second):
        phi = b.phi(x.type)
        phi.add_incoming(x, first_block)
        phi.add_incoming(y, second_block)
        out.append(phi)
    return out


def intrinsic(b: ir.IRBuilder, name: str, ret: ir.Type, args: list) -> ir.Value:
    module = b.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name)
    return b.call(fn, args)


_LOG2E, _LN2 = 1.4426950408889634, 0.6931471805599453


def _fsuffix(t: ir.Type) -> str:
    return {F16: "f16", F32: "f32", F64: "f64"}[t]


def _exp(b, x):
    # ex2.approx.ftz.f32(x log2 e): PTX's exp2, relative error under 2^-22 (PTX ISA, ex2)
    if x.type != F32:
        return b.fptrunc(_exp(b, b.fpext(x, F32)), x.type) if x.type == F16 else None
    return intrinsic(b, "llvm.nvvm.ex2.approx.ftz.f", F32, [b.fmul(x, ir.Constant(F32, _LOG2E))])


def _exp2(b, x):
    # ex2.approx.ftz.f32: relative error under 2^-22 (PTX ISA, ex2)
    if x.type != F32:
        return b.fptrunc(_exp2(b, b.fpext(x, F32)), x.type) if x.type == F16 else None
    return intrinsic(b, "llvm.nvvm.ex2.approx.ftz.f", F32, [x])


def _log2(b, x):
    if x.type != F32:
        return b.fptrunc(_log2(b, b.fpext(x, F32)), x.type)
    return intrinsic(b, "llvm.nvvm.lg2.approx.ftz.f", F32, [x])


def _log(b, x):
    if x.type != F32:
        return b.fptrunc(_log(b, b.fpext(x, F32)), x.type)
    return b.fmul(intrinsic(b, "llvm.nvvm.lg2.approx.ftz.f", F32, [x]), ir.Constant(F32, _LN2))


def _poly(b, x, coeffs):
    """coeffs[0] + coeffs[1] x + ... by Horner's rule, f32."""
    acc = ir.Constant(F32, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, x), ir.Constant(F32, c))
    return acc


def _f32_only(fn):
    """``fn`` on f32; f16 and f64 through f32 (the approximations below are f32-exact)."""
    def wrapped(b, x):
        if x.type == F32:
            return fn(b, x)
        wide = b.fpext(x, F32) if x.type == F16 else b.fptrunc(x, F32)
        out = fn(b, wide)
        return b.fptrunc(out, x.type) if x.type == F16 else b.fpext(out, x.type)
    return wrapped


def _odd_taylor_or(b, x, ax, small: float, coeffs, far):
    """``x * poly(x^2)`` where ``|x| < small`` (no cancellation near 0), else ``far`` with
    the sign of ``x``."""
    near = b.fmul(x, _poly(b, b.fmul(x, x), coeffs))
    signed = intrinsic(b, "llvm.copysign.f32", F32, [far, x])
    return b.select(b.fcmp_ordered("<", ax, ir.Constant(F32, small)), near, signed)


@_f32_only
def _tanh(b, x):
    # 1 - 2 / (e^(2|x|) + 1) (absolute error a few ulps of 1, ex2.approx's 2^-22 included);
    # below 1/16 the odd Taylor series to x^5 (truncation under 2^-28 relative)
    ax = intrinsic(b, "llvm.fabs.f32", F32, [x])
    e = _exp(b, b.fmul(ax, ir.Constant(F32, 2.0)))
    far = b.fsub(ir.Constant(F32, 1.0), b.fdiv(ir.Constant(F32, 2.0), b.fadd(e, ir.Constant(F32, 1.0))))
    return _odd_taylor_or(b, x, ax, 0.0625, [1.0, -1 / 3, 2 / 15], far)


_ERF_P = 0.3275911
_ERF_A = [0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429]


@_f32_only
def _erf(b, x):
    # Abramowitz & Stegun 7.1.26: 1 - t (a1 + ... + a5 t^4) e^(-x^2), t = 1 / (1 + p|x|),
    # absolute error under 1.5e-7 (plus f32 rounding); below 1/8 the odd Taylor series to
    # x^7 (truncation under 2^-31 relative), so small arguments keep their relative accuracy
    ax = intrinsic(b, "llvm.fabs.f32", F32, [x])
    t = b.fdiv(ir.Constant(F32, 1.0), b.fadd(ir.Constant(F32, 1.0), b.fmul(ax, ir.Constant(F32, _ERF_P))))
    tail = b.fmul(_poly(b, t, _ERF_A), _exp(b, b.fneg(b.fmul(ax, ax))))
    far = b.fsub(ir.Constant(F32, 1.0), tail)
    two_over_sqrt_pi = 1.1283791670955126
    coeffs = [two_over_sqrt_pi * c for c in (1.0, -1 / 3, 1 / 10, -1 / 42)]
    return _odd_taylor_or(b, x, ax, 0.125, coeffs, far)


def _unary_intrinsic(name):
    return lambda b, x: intrinsic(b, f"llvm.{name}.{_fsuffix(x.type)}", x.type, [x])


def _rsqrt(b, x):
    if x.type != F32:
        return b.fdiv(ir.Constant(x.type, 1.0), _unary_intrinsic("sqrt")(b, x))
    return intrinsic(b, "llvm.nvvm.rsqrt.approx.ftz.f", F32, [x])


#: 2 pi as three f32 parts (Cody-Waite): C1 has 9 significant bits, so k C1 is exact for
#: |k| < 2^15 (angles to about 2 10^5 radians); the sum of the parts is 2 pi to 2^-60
_TWO_PI = (6.28125, 1.9353071795864769e-03, 1.2556659146237498e-11)


def _sincos(approx: str):
    """sin / cos: the argument reduced to [-pi, pi] (k = rint(x / 2 pi), x - k 2 pi in three
    fma steps), then ``sin.approx.f32`` / ``cos.approx.f32`` (absolute error about 2^-21
    there, PTX ISA)."""
    def emit(b, x):
        if x.type != F32:
            raise LoweringError(f"nvptx: math.{approx} of {x.type} is not supported (f32 only)", None)
        k = intrinsic(b, "llvm.rint.f32", F32, [b.fmul(x, ir.Constant(F32, 0.15915494309189535))])
        minus_k = b.fneg(k)
        r = x
        for part in _TWO_PI:
            r = intrinsic(b, "llvm.fma.f32", F32, [minus_k, ir.Constant(F32, part), r])
        fn = ir.FunctionType(F32, [F32])
        return b.call(ir.InlineAsm(fn, f"{approx}.approx.ftz.f32 $0, $1;", "=f,f"), [r])
    return emit


FLOAT_UNARY = {
    "math.exp": _exp, "math.log": _log, "math.exp2": _exp2, "math.log2": _log2, "math.sqrt": _unary_intrinsic("sqrt"), "math.rsqrt": _rsqrt,
    "math.absf": _unary_intrinsic("fabs"), "math.floor": _unary_intrinsic("floor"),
    "math.ceil": _unary_intrinsic("ceil"), "arith.negf": lambda b, x: b.fneg(x),
    "math.tanh": _tanh, "math.erf": _erf, "math.sin": _sincos("sin"), "math.cos": _sincos("cos"),
}

#: math ops computed by CUDA's libdevice (:mod:`.libdevice`): op -> its function's name
#: without the type suffix (``f`` for f32; f16 and bf16 computed in f32)
LIBDEVICE_UNARY = {f"math.{n}": n for n in ("atan", "asin", "acos", "atanh", "asinh", "acosh", "sinh", "cosh", "tan",
                                            "expm1", "log1p", "log10", "erfc", "cbrt")}
LIBDEVICE_BINARY = {"math.powf": "pow", "math.atan2": "atan2", "arith.remf": "fmod"}

#: math ops that are one LLVM intrinsic on NVPTX
INTRINSIC_UNARY = {"math.trunc": "trunc", "math.round": "round", "math.roundeven": "roundeven"}


def libdevice_float(b, name: str, args: list, op) -> ir.Value:
    """libdevice's ``name`` on float ``args``: ``__nv_<name>f`` for f32 (f16 widened to
    f32 and a float result narrowed), ``__nv_<name>`` for f64; the result is of libdevice's
    type (an integer for ``ilogb``)."""
    t = args[0].type
    if t == F64:
        return libdevice.call(b, name, args, op)
    wide = [b.fpext(a, F32) if a.type == F16 else a for a in args]
    out = libdevice.call(b, name + "f", wide, op)
    return b.fptrunc(out, F16) if t == F16 and out.type == F32 else out


FLOAT_BINARY = {
    "arith.addf": lambda b, x, y: b.fadd(x, y), "arith.subf": lambda b, x, y: b.fsub(x, y),
    "arith.mulf": lambda b, x, y: b.fmul(x, y), "arith.divf": lambda b, x, y: b.fdiv(x, y),
    "arith.maximumf": lambda b, x, y: intrinsic(b, f"llvm.maximum.{_fsuffix(x.type)}", x.type, [x, y]),
    "arith.minimumf": lambda b, x, y: intrinsic(b, f"llvm.minimum.{_fsuffix(x.type)}", x.type, [x, y]),
    "arith.maxnumf": lambda b, x, y: intrinsic(b, f"llvm.maxnum.{_fsuffix(x.type)}", x.type, [x, y]),
    "arith.minnumf": lambda b, x, y: intrinsic(b, f"llvm.minnum.{_fsuffix(x.type)}", x.type, [x, y]),
}

INT_BINARY = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv", "arith.divui": "udiv",
    "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and_", "arith.ori": "or_", "arith.xori": "xor",
    "arith.shli": "shl", "arith.shrsi": "ashr", "arith.shrui": "lshr",
}

_INT_MINMAX = {"arith.maxsi": ">", "arith.minsi": "<", "arith.maxui": ">", "arith.minui": "<"}

_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
         "true"]
_FCMP_OPS = {"eq": "==", "gt": ">", "ge": ">=", "lt": "<", "le": "<=", "ne": "!=", "rd": "ord", "no": "uno"}


def scalar_op(b: ir.IRBuilder, op, args: list, result_type) -> ir.Value:
    """One slot of element-wise op ``op`` (arith/math) on LLVM scalars ``args``."""
    name = op.name
    out = llvm_type(result_type, op)
    in_type = op.operands[0].type if op.operands else result_type
    if name in FLOAT_UNARY:
        x = float_value(b, args[0], in_type)
        return float_result(b, FLOAT_UNARY[name](b, x), result_type)
    if name in FLOAT_BINARY:
        x, y = (float_value(b, a, in_type) for a in args)
        return float_result(b, FLOAT_BINARY[name](b, x, y), result_type)
    if name in LIBDEVICE_UNARY or name in LIBDEVICE_BINARY:
        xs = [float_value(b, a, in_type) for a in args]
        return float_result(b, libdevice_float(b, LIBDEVICE_UNARY.get(name) or LIBDEVICE_BINARY[name], xs, op),
                            result_type)
    if name in INTRINSIC_UNARY or name == "math.copysign":
        xs = [float_value(b, a, in_type) for a in args]
        which = INTRINSIC_UNARY.get(name, "copysign")
        return float_result(b, intrinsic(b, f"llvm.{which}.{_fsuffix(xs[0].type)}", xs[0].type, xs), result_type)
    if name == "math.fma":   # one rounding (f16 and f32 in their own type; bf16 through f32)
        x, y, z = (float_value(b, a, in_type) for a in args)
        return float_result(b, intrinsic(b, f"llvm.fma.{_fsuffix(x.type)}", x.type, [x, y, z]), result_type)
    if name in INT_BINARY:
        return getattr(b, INT_BINARY[name])(*args)
    if name == "arith.floordivsi":   # toward -inf: the quotient less one where the signs differ and it is inexact
        x, y = args
        q = b.sdiv(x, y)
        zero = ir.Constant(x.type, 0)
        inexact = b.icmp_signed("!=", b.mul(q, y), x)
        signs = b.icmp_signed("<", b.xor(x, y), zero)
        return b.select(b.and_(inexact, signs), b.sub(q, ir.Constant(x.type, 1)), q)
    if name in _INT_MINMAX:
        signed = name.endswith("si")
        cmp = (b.icmp_signed if signed else b.icmp_unsigned)(_INT_MINMAX[name], *args)
        return b.select(cmp, *args)
    if name == "arith.cmpi":
        pred = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"][op.predicate.value.data]
        fn = b.icmp_unsigned if pred.startswith("u") else b.icmp_signed
        return fn(_CMPI[pred], *args)
    if name == "arith.cmpf":
        pred = _CMPF[op.predicate.value.data]
        x, y = (float_value(b, a, in_type) for a in args)
        fn = b.fcmp_unordered if pred.startswith("u") else b.fcmp_ordered
        return fn(_FCMP_OPS.get(pred[1:], pred), x, y) if pred not in ("false", "true") else ir.Constant(I1, pred == "true")
    if name == "arith.select":
        return b.select(*args)
    if name == "xetile.extern_elementwise":
        return extern(b, op, args)
    return convert(b, op, args[0], in_type, result_type, out)


def extern(b: ir.IRBuilder, op, args: list) -> ir.Value:
    """``xt.extern`` calls the NVIDIA backend defines: ``ldexp(x, e)`` (f32 x, i32 e), x 2^e
    as three multiplications by powers of two built from their bits (e clamped to
    [-300, 300], past which every f32 result is 0 or infinite; each factor 2^k, |k| <=
    100, a normal f32), so the product is exact wherever x 2^e is a normal f32 (a
    subnormal result is rounded at each step that reaches the subnormal range)."""
    callee = op.callee.data
    if callee != "ldexp" or len(args) != 2 or args[0].type != F32 or not isinstance(args[1].type, ir.IntType):
        return _libdevice_extern(b, op, callee, args)
    x, e = args
    e = b.sext(e, I32) if e.type.width < 32 else b.trunc(e, I32) if e.type.width > 32 else e
    lo, hi = ir.Constant(I32, -300), ir.Constant(I32, 300)
    e = b.select(b.icmp_signed("<", e, lo), lo, b.select(b.icmp_signed(">", e, hi), hi, e))
    k1 = b.sdiv(e, ir.Constant(I32, 3))
    rest = b.sub(e, k1)
    k2 = b.sdiv(rest, ir.Constant(I32, 2))
    k3 = b.sub(rest, k2)
    for k in (k1, k2, k3):
        x = b.fmul(x, b.bitcast(b.shl(b.add(k, ir.Constant(I32, 127)), ir.Constant(I32, 23)), F32))
    return x


#: OpenCL integer builtins -> libdevice's (signed 32-bit name, unsigned 32-bit name, 64-bit name)
_INT_EXTERNS = {"popcount": ("popc", "popc", "popcll"), "clz": ("clz", "clz", "clzll"),
                "mul_hi": ("mulhi", "umulhi", None), "hadd": ("hadd", "uhadd", None),
                "rhadd": ("rhadd", "urhadd", None), "mul24": ("mul24", "umul24", None), "abs": ("abs", None, "llabs")}
#: OpenCL float builtins whose libdevice function has another name
_FLOAT_EXTERNS = {"mad": "fma", "pown": "powi"}


def _libdevice_extern(b, op, callee: str, args: list) -> ir.Value:
    """``xt.extern`` of an OpenCL builtin through libdevice: float ones by their name (f32:
    ``__nv_<name>f``, f16 computed in f32, f64 ``__nv_<name>``), integer ones by
    :data:`_INT_EXTERNS`; ``rotate`` is LLVM's funnel shift."""
    out = llvm_type(op.results[0].type, op)
    in_elem = elem_of(op.operands[0].type) if op.operands else None
    if args and isinstance(args[0].type, (ir.HalfType, ir.FloatType, ir.DoubleType)) or is_bf16(in_elem):
        xs = [float_value(b, a, op.operands[i].type) if i < len(op.operands) else a for i, a in enumerate(args)]
        name = _FLOAT_EXTERNS.get(callee, callee)
        suffix = "" if xs[0].type == F64 else "f"
        if not libdevice.has(name + suffix) and libdevice.find() is not None:
            raise LoweringError(f"nvptx: xt.extern({callee!r}): libdevice has no {libdevice.PREFIX}{name}{suffix} "
                                f"(xt.extern takes OpenCL builtin names; on NVIDIA targets those libdevice has)", op)
        r = libdevice_float(b, name, xs, op)
        if isinstance(out, ir.IntType):       # ilogb and the like
            if not isinstance(r.type, ir.IntType):
                return b.fptosi(r, out)
            return r if r.type == out else b.sext(r, out) if r.type.width < out.width else b.trunc(r, out)
        if isinstance(r.type, ir.IntType):    # isnan and the like, asked for as a float
            r = b.sitofp(r, F32)
        return float_result(b, r if r.type == out or is_bf16(elem_of(op.results[0].type)) else
                            (b.fpext(r, out) if _fwidth(r.type) < _fwidth(out) else b.fptrunc(r, out)),
                            op.results[0].type)
    if callee == "rotate" and len(args) == 2:
        x, n = args
        n = n if n.type == x.type else b.sext(n, x.type) if n.type.width < x.type.width else b.trunc(n, x.type)
        return intrinsic(b, f"llvm.fshl.i{x.type.width}", x.type, [x, x, n])
    names = _INT_EXTERNS.get(callee)
    width = args[0].type.width if args else 0
    pick = None if names is None else names[2] if width == 64 else names[1] if is_unsigned(in_elem) else names[0]
    if pick is None or width not in (32, 64):
        raise LoweringError(f"nvptx: xt.extern({callee!r}) of {in_elem} is not supported on NVIDIA targets (float "
                            f"builtins libdevice has, and {', '.join(sorted(_INT_EXTERNS))}, rotate of 32- and 64-bit "
                            f"integers are)", op)
    r = libdevice.call(b, pick, list(args), op)
    return r if r.type == out else b.zext(r, out) if r.type.width < out.width else b.trunc(r, out)


def convert(b, op, v, in_type, result_type, out):
    """The casts: float widths, int widths, int <-> float, index casts, bitcasts."""
    name = op.name
    src, dst = elem_of(in_type), elem_of(result_type)
    if name == "arith.truncf" and is_fp8(dst):     # the shared integer code: the Intel targets' rounding
        x = float_value(b, v, src)
        x = x if x.type == F32 else b.fpext(x, F32) if x.type == F16 else b.fptrunc(x, F32)
        return fp8_codes.from_f32(b, x, fp8_codes.fp8_format(dst))
    if name in ("arith.extf", "arith.truncf"):
        x = fp8_to_f16(b, v, src) if is_fp8(src) else float_value(b, v, src)
        if is_bf16(dst):
            x = b.fpext(x, F32) if x.type != F32 and x.type == F16 else b.fptrunc(x, F32) if x.type == F64 else x
            return f32_to_bf16(b, x)
        if x.type == out:
            return x
        return b.fpext(x, out) if _fwidth(x.type) < _fwidth(out) else b.fptrunc(x, out)
    if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
        width_in, width_out = v.type.width, out.width
        if width_in == width_out:
            return v
        if width_in > width_out:
            return b.trunc(v, out)
        return b.zext(v, out) if name in ("arith.extui", "arith.index_castui") or width_in == 1 else b.sext(v, out)
    if name in ("arith.sitofp", "arith.uitofp"):
        wide = F32 if is_bf16(dst) else out
        x = b.sitofp(v, wide) if name == "arith.sitofp" else b.uitofp(v, wide)
        return f32_to_bf16(b, x) if is_bf16(dst) else x
    if name in ("arith.fptosi", "arith.fptoui"):
        x = float_value(b, v, src)
        return b.fptosi(x, out) if name == "arith.fptosi" else b.fptoui(x, out)
    if name == "arith.bitcast":
        return b.bitcast(v, out)
    raise LoweringError(f"nvptx: {name} is not supported on NVIDIA targets yet", op)


def _fwidth(t: ir.Type) -> int:
    return {F16: 16, F32: 32, F64: 64}[t]


def constant(t: ir.Type, value) -> ir.Constant:
    return ir.Constant(t, value)
