"""IR builders for ``xetile_dsl.language.random``: Philox4x32 as element-wise uint32
arithmetic, the way ``xetile_dsl/interpreter/philox.py`` defines it.

Nothing here is a new op: a draw is ``arith`` xor/mul/add on uint32 values, the
multiply-high a 64-bit product of the zero-extended words shifted down, the float a
``sitofp`` and one multiply, ``randn`` the math ops of Box-Muller.  So every stage
(interpreter, blocking, lane distribution, codegen) treats a draw like any other
element-wise code, and the key words of a constexpr seed fold into constants."""
from __future__ import annotations

import ast

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, Signedness, f32, i32, i64

from ..dialects import _arith_vector as av
from . import semantic as sem
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import _bind
from ..dialects.types import is_float

U32 = IntegerType(32, Signedness.UNSIGNED)
MASK = 0xFFFFFFFF
KEY_A, KEY_B = 0x9E3779B9, 0xBB67AE85          # the key's Weyl increments
ROUND_A, ROUND_B = 0xD2511F53, 0xCD9E8D57      # the round multipliers
UNIFORM_SCALE = 4.6566127342e-10               # (2**31 - 1) * scale < 1 in f32
BOX_MULLER_MIN, TWO_PI = 1.0e-7, 6.283185307179586


def _is_int32(elem) -> bool:
    return isinstance(elem, IntegerType) and elem.width.data == 32


def _word(builder, arg: ast.AST, what: str):
    """A 32-bit integer operand (number, scalar or tile) as given; numbers as ints mod 2**32."""
    value = builder.visit(arg)
    if isinstance(value, bool) or isinstance(value, float):
        raise builder.error(arg, f"{what} must be a 32-bit integer (int32 or uint32), got {describe(value)}")
    if isinstance(value, int):
        return value & MASK
    if sem.is_scalar(value) and sem.elem_of(value) == sem.INDEX:
        # a program id, or arithmetic on it: an int scalar, taken as int32 as a number is
        # (Triton's program ids are int32), e.g. xt.philox(seed, offs, xt.program_id(0), 0, 0)
        return sem.convert(builder, value, i32, arg)
    if not (sem.is_tile(value) or sem.is_scalar(value)) or not _is_int32(sem.elem_of(value)):
        got = sem.describe_type(sem.elem_of(value)) if sem.elem_of(value) is not None else describe(value)
        raise builder.error(arg, f"{what} must be a 32-bit integer (int32 or uint32) tile, scalar or number, got {got}")
    return value


def _op(builder, cls, a, b, elem, node):
    """``cls(a, b)`` with both operands as SSA values of element type ``elem``, broadcast.
    On scalars a uint32 op is computed on signless i32 (the same bits; a scalar
    ``arith.constant`` is signless) and the result read back as uint32."""
    if elem == U32 and sem.broadcast_shapes(builder, [sem.shape_of(v) for v in (a, b)], node) is None:
        a, b = (_signed(v) if isinstance(v, int) else v for v in (a, b))
        return sem.convert(builder, _op(builder, cls, a, b, i32, node), U32, node)
    (x, y), _, _ = sem.unify(builder, (a, b), node, elem)
    return builder.emit(cls(x, y)).result


def _signed(word: int) -> int:
    """The int32 with the bits of the uint32 ``word``."""
    return word - (1 << 32) if word >= 1 << 31 else word


def umulhi_u32(builder, a, b, node):
    """High word of the 64-bit product of two uint32 operands (SSA values or ints): the
    zero-extended product shifted down (arithmetic shift: bits above 63 are cut anyway)."""
    if isinstance(a, int) and isinstance(b, int):
        return (a * b) >> 32
    wide = [v if isinstance(v, int) else sem.convert(builder, sem.convert(builder, v, U32, node), i64, node)
            for v in (a, b)]
    product = _op(builder, arith.MuliOp, wide[0], wide[1], i64, node)
    return sem.convert(builder, _op(builder, arith.ShRSIOp, product, 32, i64, node), U32, node)


def _seed_key(builder, arg: ast.AST):
    """The key ``(k0, k1)`` of the seed: ints for a constexpr, uint32 scalars for a runtime
    integer (an int argument is an ``index`` scalar; 32-bit ones are sign-extended to 64
    bits, as Triton's cast of a signed seed to uint64)."""
    seed = builder.visit(arg)
    if isinstance(seed, int) and not isinstance(seed, bool):
        bits = seed & 0xFFFFFFFFFFFFFFFF
        return bits & MASK, bits >> 32
    elem = sem.elem_of(seed)
    if not sem.is_scalar(seed) or is_float(elem) or (isinstance(elem, IntegerType) and elem.width.data not in (32, 64)):
        raise builder.error(arg, f"the seed must be an integer number or a 32/64-bit integer scalar argument, "
                            f"got {describe(seed)}")
    wide = sem.convert(builder, seed, i64, arg)
    return sem.convert(builder, wide, U32, arg), sem.convert(builder, _op(builder, arith.ShRSIOp, wide, 32, i64, arg),
                                                          U32, arg)


def _rounds(builder, args) -> int:
    if "n_rounds" not in args:
        return 10
    n = builder.constexpr(args["n_rounds"], "n_rounds")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise builder.error(args["n_rounds"], f"n_rounds must be a non-negative constexpr int, got {n!r}")
    return n


def _add_key(builder, k, inc, node):
    return (k + inc) & MASK if isinstance(k, int) else _op(builder, arith.AddiOp, k, inc, U32, node)


def philox_rounds(builder, key, counters, n_rounds: int, node):
    """Philox4x32 rounds of the uint32 ``counters`` under ``key``: four uint32 values."""
    shape = sem.broadcast_shapes(builder, [sem.shape_of(c) for c in counters], node)
    c = [sem.coerce(builder, v, U32, shape, node) for v in counters]
    k0, k1 = key
    for _ in range(n_rounds):
        hi_b, hi_a = umulhi_u32(builder, ROUND_B, c[2], node), umulhi_u32(builder, ROUND_A, c[0], node)
        lo_b, lo_a = (_op(builder, arith.MuliOp, m, v, U32, node) for m, v in ((ROUND_B, c[2]), (ROUND_A, c[0])))
        x0 = _op(builder, arith.XOrIOp, _op(builder, arith.XOrIOp, hi_b, c[1], U32, node), k0, U32, node)
        x2 = _op(builder, arith.XOrIOp, _op(builder, arith.XOrIOp, hi_a, c[3], U32, node), k1, U32, node)
        c = [x0, lo_b, x2, lo_a]
        k0, k1 = _add_key(builder, k0, KEY_A, node), _add_key(builder, k1, KEY_B, node)
    return tuple(c)


def _draw(builder, node: ast.Call, name: str):
    """The four words of ``randint4x(seed, offsets)`` (and the bound arguments)."""
    args = _bind(builder, node)
    key = _seed_key(builder, args["seed"])
    offsets = _word(builder, args["offsets"], f"{name}'s offsets")
    return philox_rounds(builder, key, (offsets, 0, 0, 0), _rounds(builder, args), node)


def uniform(builder, x, node):
    """uint32 -> float32 in [0, 1): read as int32, ``~x`` for negatives, times the scale."""
    s = sem.convert(builder, x, i32, node)
    shape = sem.shape_of(s)
    negative = builder.emit(av.CmpiOp(s, sem.constant(builder, 0, i32, shape), "slt")).result
    flipped = _op(builder, arith.XOrIOp, s, -1, i32, node)
    folded = builder.emit(av.SelectOp(negative, flipped, s)).result
    return _op(builder, arith.MulfOp, sem.convert(builder, folded, f32, node), UNIFORM_SCALE, f32, node)


@LANGUAGE.register("philox")
def build_philox(builder, node: ast.Call):
    """``xt.philox(seed, c0, c1, c2, c3, n_rounds=10)`` -> four uint32 values."""
    args = _bind(builder, node)
    key = _seed_key(builder, args["seed"])
    counters = [_word(builder, args[k], f"philox's {k}") for k in ("c0", "c1", "c2", "c3")]
    if all(isinstance(c, int) for c in counters):
        counters[0] = sem.convert(builder, sem.constant(builder, _signed(counters[0]), i32), U32, node)
    return philox_rounds(builder, key, counters, _rounds(builder, args), node)


@LANGUAGE.register("randint4x")
def build_randint4x(builder, node: ast.Call):
    return _draw(builder, node, "randint4x")


@LANGUAGE.register("randint")
def build_randint(builder, node: ast.Call):
    return _draw(builder, node, "randint")[0]


@LANGUAGE.register("rand")
def build_rand(builder, node: ast.Call):
    return uniform(builder, _draw(builder, node, "rand")[0], node)


def box_muller(builder, u1, u2, node, both: bool):
    """``r cos(th)`` (and ``r sin(th)`` when ``both``), ``r = sqrt(-2 log(max(1e-7, u1)))``,
    ``th = 2 pi u2``, in f32 as Triton computes them."""
    u1 = _op(builder, arith.MaximumfOp, u1, BOX_MULLER_MIN, f32, node)
    th = _op(builder, arith.MulfOp, u2, TWO_PI, f32, node)
    log = builder.emit(math.LogOp(u1)).result
    r = builder.emit(math.SqrtOp(_op(builder, arith.MulfOp, log, -2.0, f32, node))).result
    cos = _op(builder, arith.MulfOp, r, builder.emit(math.CosOp(th)).result, f32, node)
    return (cos, _op(builder, arith.MulfOp, r, builder.emit(math.SinOp(th)).result, f32, node)) if both else cos


@LANGUAGE.register("randn")
def build_randn(builder, node: ast.Call):
    """Box-Muller's cosine output of the first two words."""
    i1, i2, _, _ = _draw(builder, node, "randn")
    return box_muller(builder, uniform(builder, i1, node), uniform(builder, i2, node), node, both=False)


@LANGUAGE.register("rand4x")
def build_rand4x(builder, node: ast.Call):
    return tuple(uniform(builder, w, node) for w in _draw(builder, node, "rand4x"))


@LANGUAGE.register("randn4x")
def build_randn4x(builder, node: ast.Call):
    u = [uniform(builder, w, node) for w in _draw(builder, node, "randn4x")]
    return box_muller(builder, u[0], u[1], node, both=True) + box_muller(builder, u[2], u[3], node, both=True)


@LANGUAGE.register("umulhi")
def build_umulhi(builder, node: ast.Call):
    """``xt.umulhi(x, y)``: the operands' 32-bit type (uint32 when both are numbers)."""
    args = _bind(builder, node)
    x, y = (_word(builder, args[k], f"umulhi's {k}") for k in ("x", "y"))
    if isinstance(x, int) and isinstance(y, int):
        return umulhi_u32(builder, x, y, node)
    elem = sem.operand_type((x, y))
    return sem.convert(builder, umulhi_u32(builder, x, y, node), elem, node)
