"""Codegen of per-lane element-wise ops, reductions, broadcasts and one-element block IO.

In the SIMT form every operand of an element-wise op has the same lane layout (the
plain ``[1, sg] x [1, 1]`` map: lane n holds column n of a block, one element per row),
so an element-wise op is the same LLVM operation on the lane's fragment vector.  A
fragment of one element is a scalar (SPIR-V has no 1-vectors).

* 16-bit floats compute in f32 and round back once (exact for + - * /, and the only
  way for bf16, which travels as its i16 bits); f32 -> bf16 rounds to nearest even.
* fp8 converts to and from f32 by integer code on its bits (``codegen/fp8.py``).
* Math functions are OpenCL builtins (``_Z3expDv8_f``...), which LLVM's SPIR-V backend
  turns into ``OpExtInst`` of the OpenCL.std set.
* ``xetile.tile_reduce`` in SIMT form: dim 0 (rows) is within the lane; dim 1 (the lane
  dimension) is a butterfly of ``intel_sub_group_shuffle`` over the subgroup, after which
  every lane holds the whole result (an ``[R, 1]`` column is replicated in every lane).
* ``xetile.tile_broadcast`` in SIMT form: a replicated column is already every lane's
  column of the result; a one-element row fragment is splat over the rows.
"""
from __future__ import annotations

import math

from llvmlite import ir
from xdsl.dialects import vector
from xdsl.dialects.builtin import BFloat16Type, Float16Type, IntegerType, VectorType
from xdsl.ir import Operation

from ...dialects import _asm, xetile
from ...dialects._math_ops import MATH
from ...errors import LoweringError
from ...dialects.types import is_fp8, is_unsigned
from .. import fp8
from ..builtins import block1d, block2d
from ..builtins.mangle import mangle, vec
from ..llvm_types import llvm_type
from . import EMITTERS

I1, I16, I32, I64, I8 = ir.IntType(1), ir.IntType(16), ir.IntType(32), ir.IntType(64), ir.IntType(8)
F32 = ir.FloatType()
_CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
         "true")
_CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_LLVM_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
#: math op -> OpenCL builtin name (f32 overloads; 16-bit floats go through f32)
_MATH = {"math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.sqrt": "sqrt",
         "math.rsqrt": "rsqrt", "math.sin": "sin", "math.cos": "cos", "math.tanh": "tanh", "math.erf": "erf",
         "math.absf": "fabs", "math.floor": "floor", "math.ceil": "ceil", "math.tan": "tan", "math.log10": "log10",
         "math.expm1": "expm1", "math.log1p": "log1p", "math.powf": "pow", "math.fma": "fma",
         "math.roundeven": "rint", "math.trunc": "trunc", "math.round": "round", "math.asin": "asin",
         "math.acos": "acos", "math.atan": "atan", "math.atan2": "atan2", "math.sinh": "sinh", "math.cosh": "cosh",
         "math.asinh": "asinh", "math.acosh": "acosh", "math.atanh": "atanh", "math.cbrt": "cbrt",
         "math.copysign": "copysign", "math.erfc": "erfc"}
_FBIN = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul", "arith.divf": "fdiv",
         "arith.remf": "frem"}
_IBIN = {"arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "sdiv", "arith.divui": "udiv",
         "arith.remsi": "srem", "arith.remui": "urem", "arith.andi": "and_", "arith.ori": "or_", "arith.xori": "xor",
         "arith.shli": "shl", "arith.shrsi": "ashr", "arith.shrui": "lshr"}
_MINMAX = {"arith.maxsi": ("icmp_signed", ">"), "arith.minsi": ("icmp_signed", "<"),
           "arith.maxui": ("icmp_unsigned", ">"), "arith.minui": ("icmp_unsigned", "<")}
_FMINMAX = {"arith.maximumf": (">", True), "arith.minimumf": ("<", True), "arith.maxnumf": (">", False),
            "arith.minnumf": ("<", False)}
#: reduce kind -> the element-wise op that combines two partial results
_REDUCE_COMBINE = {"add": ("arith.addf", "arith.addi"), "mul": ("arith.mulf", "arith.muli"),
                   "maximumf": ("arith.maximumf", None), "minimumf": ("arith.minimumf", None),
                   "maxnumf": ("arith.maxnumf", None), "minnumf": ("arith.minnumf", None),
                   "maxsi": (None, "arith.maxsi"), "minsi": (None, "arith.minsi"), "maxui": (None, "arith.maxui"),
                   "minui": (None, "arith.minui"), "and": (None, "arith.andi"), "or": (None, "arith.ori"),
                   "xor": (None, "arith.xori")}


@EMITTERS.register(xetile.TileReduceOp, xetile.TileBroadcastOp, vector.BroadcastOp, *MATH.operations)
def emit(gen, op: Operation) -> None:
    """Lower ``op`` element-wise (vector arith, all math, reduce/broadcast); scalar_ops
    registers it for the arith ops too."""
    _check_fragments(op)
    _Emitter(gen).op(op)


def _check_fragments(op: Operation) -> None:
    """Element-wise codegen works on whole fragment vectors: one that SPIR-V cannot hold
    (32 8-bit elements per lane, carried packed in dwords: ARC's int8 operand blocks) is
    reported at the op."""
    for v in list(op.operands) + list(op.results):
        t = v.type
        if isinstance(t, VectorType) and _count(t) > 1 and getattr(llvm_type(t), "count", 1) != _count(t):
            raise LoweringError(f"{op.name} on {_count(t)} {t.element_type} elements per lane (an 8-bit DPAS "
                                f"operand block: B on PVC, A and B on ARC) is not lowered yet: a SPIR-V vector holds at most 16 "
                                f"elements; apply the op to the tile_mma result or to a wider type", op)


def _elem(t):
    return t.element_type if isinstance(t, VectorType) else t


def _is_16bit_float(t) -> bool:
    return isinstance(_elem(t), (BFloat16Type, Float16Type))


def splat_const(lt: ir.Type, value) -> ir.Constant:
    """``value`` in every element of ``lt`` (or the scalar)."""
    if isinstance(lt, ir.VectorType):
        return ir.Constant(lt, [ir.Constant(lt.element, value)] * lt.count)
    return ir.Constant(lt, value)


_DIVISIONS = ("sdiv", "udiv", "srem", "urem")


def int_divide(b: ir.IRBuilder, method: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x sdiv/udiv/srem/urem y`` (scalars or vectors) with the semantics of docs/decisions/019-arithmetic-semantics.md,
    "Integer division": by zero the quotient is 0 and the remainder ``x`` (so ``x == y *
    q + r`` still holds); the signed ``MIN / -1`` wraps to ``MIN`` with remainder 0.  LLVM
    leaves both undefined (the CPU device traps), so the divisor is replaced by 1 there
    and the result selected."""
    zero, one = splat_const(x.type, 0), splat_const(x.type, 1)
    by_zero = b.icmp_unsigned("==", y, zero)
    bad = by_zero
    if method in ("sdiv", "srem"):
        lowest = splat_const(x.type, -(1 << (_elem_width(x.type) - 1)))
        overflow = b.and_(b.icmp_signed("==", x, lowest), b.icmp_signed("==", y, splat_const(x.type, -1)))
        bad = b.or_(by_zero, overflow)   # MIN / 1 = MIN and MIN % 1 = 0: the wrapped results
    result = getattr(b, method)(x, b.select(bad, one, y))
    return b.select(by_zero, zero if method in ("sdiv", "udiv") else x, result)


def floor_divide(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """Python's ``//`` (``arith.floordivsi``): the truncating quotient, one less when the
    division is inexact and the signs differ; 0 by zero (:func:`int_divide`)."""
    zero = splat_const(x.type, 0)
    q, r = int_divide(b, "sdiv", x, y), int_divide(b, "srem", x, y)
    fix = b.and_(b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(x, y), zero)),
                 b.icmp_unsigned("!=", y, zero))
    return b.sub(q, b.zext(fix, x.type))


def _elem_width(lt: ir.Type) -> int | None:
    """Bit width of an integer scalar or vector type's elements (None for floats)."""
    elem = lt.element if isinstance(lt, ir.VectorType) else lt
    return elem.width if isinstance(elem, ir.IntType) else None


def _float_splat(value: ir.Value) -> float | None:
    """The one float every element of the LLVM constant ``value`` holds, else None."""
    if not isinstance(value, ir.Constant):
        return None
    items = value.constant if isinstance(value.constant, (list, tuple)) else [value]
    floats = {getattr(item, "constant", None) for item in items}
    if len(floats) != 1:
        return None
    (only,) = floats
    return float(only) if isinstance(only, (int, float)) else None


def _one_select_suffices(pred: str, constant: float | None) -> bool:
    """True when max/min(x, constant) is ``select(x pred constant or unordered, x,
    constant)``: a NaN x wins through the unordered compare (both NaN rules agree, the
    constant being a number), and a zero constant has the sign the compare cannot tell
    apart from the other zero resolved in its favour (+0 for max, -0 for min)."""
    if constant is None or math.isnan(constant):
        return False
    if constant == 0.0:
        return math.copysign(1.0, constant) == (1.0 if pred == ">" else -1.0)
    return True


def _with_elem(lt: ir.Type, elem: ir.Type) -> ir.Type:
    return ir.VectorType(elem, lt.count) if isinstance(lt, ir.VectorType) else elem


class _Emitter:
    def __init__(self, gen):
        self.gen, self.b = gen, gen.b

    def v(self, value):
        return self.gen.v(value)

    def set(self, result, value) -> None:
        self.gen.values[result] = value

    # --- 16-bit floats ---------------------------------------------------------------------
    def to_f32(self, x: ir.Value, t) -> ir.Value:
        b, e = self.b, _elem(t)
        if isinstance(e, BFloat16Type):  # the top half of an f32: exact
            wide = b.shl(b.zext(x, _with_elem(x.type, I32)), splat_const(_with_elem(x.type, I32), 16))
            return b.bitcast(wide, _with_elem(x.type, F32))
        if isinstance(e, Float16Type):
            return b.fpext(x, _with_elem(x.type, F32))
        if is_fp8(e):  # integer code on the bits (codegen/fp8.py)
            return fp8.to_f32(b, x, fp8.fp8_format(e))
        return x

    def from_f32(self, x: ir.Value, t) -> ir.Value:
        b, e = self.b, _elem(t)
        if isinstance(e, Float16Type):
            return b.fptrunc(x, _with_elem(x.type, ir.HalfType()))
        if is_fp8(e):
            return fp8.from_f32(b, x, fp8.fp8_format(e))
        if not isinstance(e, BFloat16Type):
            return x
        i32t, i16t = _with_elem(x.type, I32), _with_elem(x.type, I16)
        bits = b.bitcast(x, i32t)
        lsb = b.and_(b.lshr(bits, splat_const(i32t, 16)), splat_const(i32t, 1))
        rounded = b.add(bits, b.add(lsb, splat_const(i32t, 0x7FFF)))  # round to nearest even
        rounded = b.trunc(b.lshr(rounded, splat_const(i32t, 16)), i16t)
        quiet = b.trunc(b.lshr(b.or_(bits, splat_const(i32t, 0x400000)), splat_const(i32t, 16)), i16t)
        return b.select(b.fcmp_unordered("uno", x, x), quiet, rounded)

    def float_args(self, op: Operation) -> list[ir.Value]:
        return [self.to_f32(self.v(o), o.type) for o in op.operands]

    # --- dispatch ----------------------------------------------------------------------------
    def op(self, op: Operation) -> None:
        name = op.name
        if isinstance(op, xetile.TileReduceOp):
            return self.reduce(op)
        if isinstance(op, xetile.TileBroadcastOp):
            return self.broadcast(op)
        if isinstance(op, vector.BroadcastOp):
            n = _count(op.vector.type)
            return self.set(op.vector, splat(self.b, self.v(op.source), n))
        if name in _FBIN or name in _FMINMAX or name in _MATH or name == "arith.negf":
            args = self.float_args(op)
            return self.set(op.results[0], self.from_f32(self.float_op(name, args, op), op.results[0].type))
        if name in _IBIN and _IBIN[name] in _DIVISIONS:
            return self.set(op.results[0], int_divide(self.b, _IBIN[name], self.v(op.lhs), self.v(op.rhs)))
        if name in _IBIN:
            return self.set(op.results[0], getattr(self.b, _IBIN[name])(self.v(op.lhs), self.v(op.rhs)))
        if name in _MINMAX:
            cmp, pred = _MINMAX[name]
            a, c = self.v(op.lhs), self.v(op.rhs)
            return self.set(op.results[0], self.b.select(getattr(self.b, cmp)(pred, a, c), a, c))
        if name == "arith.cmpf":
            return self.set(op.result, self.cmpf(_CMPF[op.predicate.value.data], *self.float_args(op)))
        if name == "arith.cmpi":
            pred = _CMPI[op.predicate.value.data]
            cmp = self.b.icmp_unsigned if pred[0] == "u" else self.b.icmp_signed
            key = pred if pred in ("eq", "ne") else pred[1:]
            return self.set(op.result, cmp(_LLVM_CMP[key], self.v(op.lhs), self.v(op.rhs)))
        if name == "math.absi":
            x = self.v(op.operands[0])
            zero = splat_const(x.type, 0)
            return self.set(op.results[0], self.b.select(self.b.icmp_signed("<", x, zero), self.b.sub(zero, x), x))
        if name == "arith.floordivsi":
            return self.set(op.result, floor_divide(self.b, self.v(op.lhs), self.v(op.rhs)))
        if name == "arith.select":
            return self.set(op.result, self.b.select(*(self.v(o) for o in op.operands)))
        return self.cast(op)

    # --- floats ---------------------------------------------------------------------------------
    def float_op(self, name: str, args: list[ir.Value], op: Operation) -> ir.Value:
        b = self.b
        if name in _FBIN:
            return getattr(b, _FBIN[name])(*args)
        if name == "arith.negf":
            return b.fneg(args[0])
        if name in _FMINMAX:
            pred, nan_wins = _FMINMAX[name]
            x, y = args
            if _float_splat(x) is not None:        # both ops are commutative: constant on the right
                x, y = y, x
            if _one_select_suffices(pred, _float_splat(y)):
                # x itself wins where the comparison is true or unordered (x NaN): exact for a
                # constant that is not NaN and not the zero the comparison cannot tell apart
                return b.select(b.fcmp_unordered(pred, x, y), x, y)
            if not nan_wins:
                # maxnumf/minnumf return the other operand when one is NaN: OpenCL fmax/fmin,
                # one sel.ge/sel.l on Xe (whose min/max ignore a NaN operand)
                return self.math("fmax" if pred == ">" else "fmin", [x, y])
            pick = b.select(b.fcmp_ordered(pred, x, y), x, y)
            # maximumf/minimumf propagate NaN
            return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), pick)
        return self.math(_MATH[name], args)

    def math(self, fname: str, args: list[ir.Value]) -> ir.Value:
        lt = args[0].type
        n = lt.count if isinstance(lt, ir.VectorType) else 1
        if n not in (1, 2, 3, 4, 8, 16):  # no OpenCL overload: element by element
            out = ir.Constant(lt, None)
            for k in range(n):
                idx = ir.Constant(I32, k)
                out = self.b.insert_element(out, self.math(fname, [self.b.extract_element(a, idx) for a in args]),
                                            idx)
            return out
        fn = self.gen.lib.declare(mangle(fname, [vec(n, "f")] * len(args)), ir.FunctionType(lt, [lt] * len(args)))
        return self.b.call(fn, args)

    def cmpf(self, pred: str, x: ir.Value, y: ir.Value) -> ir.Value:
        b = self.b
        if pred in ("false", "true"):
            return splat_const(_with_elem(x.type, I1), int(pred == "true"))
        if pred in ("ord", "uno"):
            return (b.fcmp_ordered if pred == "ord" else b.fcmp_unordered)(pred, x, y)
        key = {"one": "ne", "une": "ne"}.get(pred, pred[1:])
        return (b.fcmp_ordered if pred[0] == "o" else b.fcmp_unordered)(_LLVM_CMP[key], x, y)

    # --- casts ------------------------------------------------------------------------------------
    def cast(self, op: Operation) -> None:
        b, name = self.b, op.name
        src_t, dst_t = op.operands[0].type, op.results[0].type
        x = self.v(op.operands[0])
        dst = self.gen_type(dst_t)
        if name in ("arith.extf", "arith.truncf"):
            out = self.from_f32(self.to_f32(x, src_t), dst_t)  # f32 in between is exact
        elif name in ("arith.sitofp", "arith.uitofp") and _elem_width(x.type) == 1:
            # LLVM's SPIR-V backend aborts on i1 -> float conversions: a select instead
            true = splat_const(_with_elem(x.type, F32), -1.0 if name == "arith.sitofp" else 1.0)
            out = b.select(x, true, splat_const(true.type, 0.0))
            out = self.from_f32(out, dst_t) if _is_16bit_float(dst_t) else b.fpext(out, dst) if dst != out.type else out
        elif name in ("arith.sitofp", "arith.uitofp"):
            conv = b.sitofp if name == "arith.sitofp" else b.uitofp
            out = self.from_f32(conv(x, _with_elem(x.type, F32)), dst_t) if _is_16bit_float(dst_t) else conv(x, dst)
        elif name in ("arith.fptosi", "arith.fptoui"):
            conv = b.fptosi if name == "arith.fptosi" else b.fptoui
            out = conv(self.to_f32(x, src_t), dst)
        elif name in ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui"):
            sw, dw = x.type.element.width if isinstance(x.type, ir.VectorType) else x.type.width, \
                dst.element.width if isinstance(dst, ir.VectorType) else dst.width
            if sw == dw:
                out = x
            elif sw > dw:
                out = b.trunc(x, dst)
            else:
                signed = name in ("arith.extsi", "arith.index_cast") and not is_unsigned(_elem(src_t))
                out = (b.sext if signed else b.zext)(x, dst)
        elif name == "arith.bitcast":
            out = b.bitcast(x, dst)
        else:
            raise LoweringError(f"codegen does not support {name} on vectors yet", op)
        self.set(op.results[0], out)

    def gen_type(self, t) -> ir.Type:
        return llvm_type(t)

    # --- reductions and broadcasts ---------------------------------------------------------------
    def combine(self, kind: str, elem, x: ir.Value, y: ir.Value) -> ir.Value:
        """``x (kind) y`` element-wise, both already in the compute type (f32 for floats)."""
        is_int = isinstance(elem, IntegerType)
        name = _REDUCE_COMBINE[kind][1 if is_int else 0]
        if name in _FBIN or name in _FMINMAX:
            return self.float_op(name, [x, y], None)
        if name in _IBIN:
            return getattr(self.b, _IBIN[name])(x, y)
        cmp, pred = _MINMAX[name]
        return self.b.select(getattr(self.b, cmp)(pred, x, y), x, y)

    def reduce(self, op: xetile.TileReduceOp) -> None:
        b, kind = self.b, op.kind.data
        elem = op.source.type.element_type
        dims = set(_asm.as_int_list(op.reduction_dims))
        x = self.to_f32(self.v(op.source), op.source.type)
        if 0 in dims:  # within the lane: the fragment's elements are the block's rows
            parts = _elements(b, x)
            x = parts[0]
            for p in parts[1:]:
                x = self.combine(kind, elem, x, p)
        if 1 in dims:  # across the lanes: butterfly, every lane ends with the whole result
            x = self.butterfly(kind, elem, x)
        self.set(op.result, self.from_f32(x, op.result.type))

    def butterfly(self, kind: str, elem, x: ir.Value) -> ir.Value:
        b, lib = self.b, self.gen.lib
        lane = lib.lane_id(b)
        is_vec = isinstance(x.type, ir.VectorType)
        scalar_t = x.type.element if is_vec else x.type
        step = 1
        while step < lib.subgroup_size:
            partner = b.xor(lane, ir.Constant(I32, step))
            other = [self._shuffle(e, scalar_t, partner) for e in _elements(b, x)]
            y = other[0] if not is_vec else _pack(b, other, x.type)
            x = self.combine(kind, elem, x, y)
            step *= 2
        return x

    def _shuffle(self, e: ir.Value, t: ir.Type, lane: ir.Value) -> ir.Value:
        """Lane ``lane``'s ``e`` through 32-bit shuffles: f32 as its bits, narrower ints
        widened (the combine then works in the element type, so sums wrap there), i64
        as two halves."""
        b, shuffle = self.b, self.gen.lib.shuffle_i32
        if t == F32:
            return b.bitcast(shuffle(b, b.bitcast(e, I32), lane), F32)
        if t.width < 32:
            return b.trunc(shuffle(b, b.zext(e, I32), lane), t)
        if t.width == 64:
            lo = shuffle(b, b.trunc(e, I32), lane)
            hi = shuffle(b, b.trunc(b.lshr(e, ir.Constant(I64, 32)), I32), lane)
            return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
        return shuffle(b, e, lane)

    def broadcast(self, op: xetile.TileBroadcastOp) -> None:
        src, n = self.v(op.source), _count(op.result.type)
        m = _count(op.source.type)
        if m == n:  # a replicated column is already each lane's column of the block
            self.set(op.result, src)
        elif m == 1:  # one element per lane (a row): the same value in every row
            self.set(op.result, splat(self.b, src, n))
        elif _stretchable(op.source.type.get_shape(), op.result.type.get_shape()):
            # lane fragments [1, k] -> [R, k] (a row in a layout with k columns per lane, e.g.
            # ARC's operand A) or [R, 1] -> [R, k] (a replicated column): row-major fragments
            (s0, s1), (r0, r1) = op.source.type.get_shape(), op.result.type.get_shape()
            parts = _elements(self.b, src)
            picked = [parts[(i if s0 > 1 else 0) * s1 + (j if s1 > 1 else 0)] for i in range(r0) for j in range(r1)]
            self.set(op.result, _pack(self.b, picked, ir.VectorType(parts[0].type, n)))
        else:
            raise LoweringError(f"tile_broadcast of a {op.source.type} lane fragment to {op.result.type}", op)


def _stretchable(src, res) -> bool:
    """Whether 2-D lane fragment shape ``src`` broadcasts to ``res`` (each dim 1 or equal)."""
    return len(src) == 2 and len(res) == 2 and all(s in (1, r) for s, r in zip(src, res))


def _count(t) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _elements(b: ir.IRBuilder, x: ir.Value) -> list[ir.Value]:
    if not isinstance(x.type, ir.VectorType):
        return [x]
    return [b.extract_element(x, ir.Constant(I32, k)) for k in range(x.type.count)]


def _pack(b: ir.IRBuilder, parts: list[ir.Value], lt: ir.VectorType) -> ir.Value:
    out = ir.Constant(lt, None)
    for k, p in enumerate(parts):
        out = b.insert_element(out, p, ir.Constant(I32, k))
    return out


def splat(b: ir.IRBuilder, scalar: ir.Value, n: int) -> ir.Value:
    """``scalar`` repeated ``n`` times (the scalar itself when ``n == 1``)."""
    if n == 1:
        return scalar
    return _pack(b, [scalar] * n, ir.VectorType(scalar.type, n))


# --- blocks too small for block messages -----------------------------------------------------
# A ``1 x sg`` row block holds one element per lane (lane n: column n).  An ``R x 1``
# column block is replicated: every lane holds all R elements; loads read all of them,
# stores write element n from lane n only.
def _address(gen, d, elem_bits: int, row: ir.Value, col: ir.Value):
    b = gen.b
    ebytes = elem_bits // 8
    width = b.lshr(d.width_bytes, ir.Constant(I32, ebytes.bit_length() - 1))
    ok = b.and_(b.icmp_unsigned("<", row, d.height), b.icmp_unsigned("<", col, width))  # unsigned: >= 0 too
    offset = b.add(b.mul(b.sext(row, I64), b.sext(d.pitch_bytes, I64)),
                   b.mul(b.sext(col, I64), ir.Constant(I64, ebytes)))
    return ok, b.gep(d.base, [offset], source_etype=I8)


def _load_one(gen, d, elem_bits: int, row: ir.Value, col: ir.Value, pad: int = 0) -> ir.Value:
    """Branch-free: out of bounds loads from the (valid) base and the value becomes
    ``pad`` (the padding's bits, 0 by default)."""
    b = gen.b
    ok, ptr = _address(gen, d, elem_bits, row, col)
    raw_t = ir.IntType(elem_bits)
    raw = b.load(b.select(ok, ptr, d.base), typ=raw_t, align=elem_bits // 8)
    return b.select(ok, raw, ir.Constant(raw_t, pad))


def _load_lane(gen, d, elem_bits: int, pad: int) -> ir.Value:
    """Element ``x + lane`` of row ``y``: one guarded per-lane load."""
    return _load_one(gen, d, elem_bits, d.y, gen.b.add(d.x, gen.lib.lane_id(gen.b)), pad)


def _load_row(gen, d, elem_bits: int, pad: int) -> ir.Value:
    """A ``1 x sg`` row as one subgroup block read (uniform address, scalar bounds test),
    the guarded per-lane load only on the cold path.  The per-lane load alone costs a
    column-index vector and a mask per row block; IGC computed those once for every
    epilogue of a split K loop (ARC 16x64 bias + ReLU) and spilled them across the loops."""
    b = gen.b
    frag = block2d.Fragment(elem_bits, 1, gen.target.subgroup_size, (1, gen.target.subgroup_size), (1, 1))
    row = block1d.RowBlock(b, frag, d.surface(), block1d.READ_ALIGN)
    with b.if_else(row.inside) as (fast, slow):
        with fast:
            fast_value = b.call(block1d.block_read(gen.lib, elem_bits, 1), [row.row_pointer(0)])
            fast_block = b.block
        with slow:
            slow_value = _load_lane(gen, d, elem_bits, pad)
            slow_block = b.block
    value = b.phi(fast_value.type)
    value.add_incoming(fast_value, fast_block)
    value.add_incoming(slow_value, slow_block)
    return value


def load_small(gen, d, elem_bits: int, rows: int, cols: int, lt: ir.Type, pad: int = 0,
               block_row: bool = False) -> ir.Value:
    """A ``1 x sg`` row block (one element per lane) or an ``R x 1`` column (replicated);
    out-of-bounds elements read the bits ``pad``.  ``block_row``: read the row with one
    subgroup block read where it lies inside the surface (:func:`_load_row`)."""
    b = gen.b
    if cols > 1:
        raw = _load_row(gen, d, elem_bits, pad) if block_row else _load_lane(gen, d, elem_bits, pad)
        return raw if lt == raw.type else b.bitcast(raw, lt)
    parts = [_load_one(gen, d, elem_bits, b.add(d.y, ir.Constant(I32, r)), d.x, pad) for r in range(rows)]
    raw = parts[0] if rows == 1 else _pack(b, parts, ir.VectorType(parts[0].type, rows))
    return raw if lt == raw.type else b.bitcast(raw, lt)


def load_row_replicated(gen, d, elem_bits: int, cols: int, lt: ir.Type, pad: int = 0) -> ir.Value:
    """A ``1 x cols`` row loaded transposed into an ``[cols, 1]`` column, which is
    replicated: every lane reads the whole row (its order is the column's); out-of-bounds
    elements read the bits ``pad``."""
    b = gen.b
    parts = [_load_one(gen, d, elem_bits, d.y, b.add(d.x, ir.Constant(I32, c)), pad) for c in range(cols)]
    raw = parts[0] if cols == 1 else _pack(b, parts, ir.VectorType(parts[0].type, cols))
    return raw if lt == raw.type else b.bitcast(raw, lt)


def load_column_per_lane(gen, d, elem_bits: int, rows: int, lt: ir.Type, pad: int = 0) -> ir.Value:
    """An ``rows x 1`` column loaded transposed into a ``1 x rows`` row (its descriptor's
    sg_map is ``[sg, 1] x [rows / sg, 1]``): lane n reads rows ``n * k .. n * k + k - 1``
    (``k = rows / sg``, one element per lane, or a run of ``k`` -- a one-row operand A of
    16-bit data on 8 lanes or 8-bit data on 16 lanes), in order; out-of-bounds elements
    read the bits ``pad``."""
    lanes = gen.target.subgroup_size
    if rows % lanes:
        raise LoweringError(f"internal: a transposed column block must have a multiple of {lanes} rows "
                            f"(a run per lane), got {rows}")
    b = gen.b
    per_lane = rows // lanes
    first = b.add(d.y, b.mul(gen.lib.lane_id(b), ir.Constant(I32, per_lane)))
    parts = [_load_one(gen, d, elem_bits, b.add(first, ir.Constant(I32, t)), d.x, pad) for t in range(per_lane)]
    raw = parts[0] if per_lane == 1 else _pack(b, parts, ir.VectorType(parts[0].type, per_lane))
    return raw if lt == raw.type else b.bitcast(raw, lt)


def store_small(gen, d, elem_bits: int, rows: int, cols: int, value: ir.Value) -> None:
    """Write a ``1 x sg`` row block or (from lane r, element r) an ``R x 1`` column."""
    b = gen.b
    raw_t = ir.IntType(elem_bits)
    lane = gen.lib.lane_id(b)
    if cols == 1:
        raw_v = value if value.type in (raw_t, ir.VectorType(raw_t, rows)) else b.bitcast(
            value, raw_t if rows == 1 else ir.VectorType(raw_t, rows))
        if rows == 1:
            elem, mine = raw_v, b.icmp_unsigned("==", lane, ir.Constant(I32, 0))
        else:
            index = b.urem(lane, ir.Constant(I32, rows))  # any in-range index; only lanes < rows write
            elem, mine = b.extract_element(raw_v, index), b.icmp_unsigned("<", lane, ir.Constant(I32, rows))
        row, col = b.add(d.y, b.select(mine, lane, ir.Constant(I32, 0))), d.x
    else:
        elem, mine = (value if value.type == raw_t else b.bitcast(value, raw_t)), ir.Constant(I1, 1)
        row, col = d.y, b.add(d.x, lane)
    ok, ptr = _address(gen, d, elem_bits, row, col)
    with b.if_then(b.and_(ok, mine)):
        b.store(elem, ptr, align=elem_bits // 8)
