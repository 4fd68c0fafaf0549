"""``xt.dot_scaled``: checks the operands, then compiles :func:`_block` (kernel-language
code) in place, as a call of a ``@jit`` function is (docs/decisions/038-dot-scaled.md)."""
from __future__ import annotations

import ast

import numpy as np

from .. import language as xt
from ..dialects.types import type_name
from . import semantic as sem
from .control import run_inline
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import _bind

BLOCK = 32  #: K elements per e8m0 scale (OCP MX)
_FORMATS = {"e4m3": ("f8e4m3fn", "f8e5m2"), "e5m2": ("f8e4m3fn", "f8e5m2"), "e2m1": ("u8", "i8")}
_NAN = float("nan")


def _block(a, a_scale, b, b_scale, acc, has_acc, fp4, b_scale_row):
    # kernel-language code, compiled in place by build_dot_scaled (fp4, has_acc: Python bools)
    if fp4:
        ia = xt.astype(a, xt.int32)
        ib = xt.astype(b, xt.int32)
        d = xt.zeros([a.shape[0], b.shape[1]], xt.float32)
        for half in xt.static_range(2):  # the low nibbles hold even K, the high nibbles odd K
            na = (ia >> (4 * half)) & 15
            ea, ma = (na & 7) >> 1, na & 1
            va = xt.where(ea == 0, xt.astype(ma, xt.float32) * 0.5, xt.astype((ma + 2) << ea, xt.float32) * 0.25)
            nb = (ib >> (4 * half)) & 15
            eb, mb = (nb & 7) >> 1, nb & 1
            vb = xt.where(eb == 0, xt.astype(mb, xt.float32) * 0.5, xt.astype((mb + 2) << eb, xt.float32) * 0.25)
            d += xt.tile_mma(xt.astype(xt.where((na & 8) != 0, -va, va), xt.float16),
                             xt.astype(xt.where((nb & 8) != 0, -vb, vb), xt.float16))
    else:
        d = xt.tile_mma(a, b)
    sa = xt.astype(a_scale, xt.int32)
    if b_scale_row:
        sb = xt.astype(b_scale, xt.int32)
    else:
        sb = xt.transpose(xt.astype(b_scale, xt.int32))
    r = xt.extern("ldexp", d, sa + sb - 254, result=xt.float32, numpy_impl=np.ldexp)
    r = xt.where((sa == 255) | (sb == 255), _NAN, r)
    if has_acc:
        r = acc + r
    return r


def _shape(builder, v, what: str, node):
    if not (sem.is_tile(v) and len(sem.shape_of(v)) == 2):
        raise builder.error(node, f"dot_scaled: {what} must be a 2-D tile value, got {describe(v)}")
    return tuple(sem.shape_of(v)), type_name(sem.elem_of(v))


@LANGUAGE.register("dot_scaled")
def build_dot_scaled(builder, node: ast.Call):
    args = _bind(builder, node)
    fmt = builder.constexpr(args["format"], "format") if "format" in args else "e4m3"
    if fmt not in _FORMATS:
        raise builder.error(args.get("format", node), f"dot_scaled: format must be \"e4m3\", \"e5m2\" or \"e2m1\", "
                            f"got {fmt!r}")
    vals = {k: builder.visit(args[k]) for k in ("a", "a_scale", "b", "b_scale")}
    acc = builder.visit(args["acc"]) if "acc" in args else None
    (m, ka), ta = _shape(builder, vals["a"], "a", node)
    (kb, n), tb = _shape(builder, vals["b"], "b", node)
    depth = BLOCK // 2 if fmt == "e2m1" else BLOCK
    what = "uint8 bytes (two e2m1 codes each, packed along K)" if fmt == "e2m1" else "xt.float8_e4m3fn or xt.float8_e5m2"
    for name, t in (("a", ta), ("b", tb)):
        if t not in _FORMATS[fmt]:
            raise builder.error(args[name], f"dot_scaled(format={fmt!r}): {name} must hold {what}, got {t}")
    if (ka, kb) != (depth, depth):
        raise builder.error(node, f"dot_scaled(format={fmt!r}): one call is one {BLOCK}-element scale block, so a "
                            f"must be [M, {depth}] and b [{depth}, N]; got a {m}x{ka} and b {kb}x{n} (loop over K "
                            f"in steps of {BLOCK})")
    b_scale_row = n > 1 and tuple(sem.shape_of(vals["b_scale"])) == (1, n)
    for name, rows in (("a_scale", m), ("b_scale", n)):
        shape, t = _shape(builder, vals[name], name, node)
        if (shape != (rows, 1) and not (name == "b_scale" and b_scale_row)) or t != "u8":
            raise builder.error(args[name], f"dot_scaled: {name} must be a [{rows}, 1] uint8 tile of e8m0 codes "
                                f"(one per row of {'a' if name == 'a_scale' else 'b^T'} and {BLOCK}-element block), "
                                f"{'' if name == 'a_scale' else f'(or [1, {n}]) '}got {describe(vals[name])}")
    if acc is not None:
        shape, t = _shape(builder, acc, "acc", node)
        if shape != (m, n) or t != "f32":
            raise builder.error(args["acc"], f"dot_scaled: acc must be an [{m}, {n}] f32 tile or None, got "
                                f"{describe(acc)}")
    env = dict(vals, acc=acc, has_acc=acc is not None, fp4=fmt == "e2m1", b_scale_row=b_scale_row)
    return run_inline(builder, _block, env)


__all__ = ["BLOCK", "build_dot_scaled"]
