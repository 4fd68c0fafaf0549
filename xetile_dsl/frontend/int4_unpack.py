"""``xt.unpack_int4``: checks the operand, then compiles :func:`_unpack` (kernel-language
code) in place: the nibbles interleaved by a ``tile_mma`` with 0/1 matrices."""
from __future__ import annotations

import ast

from .. import language as xt
from ..dialects.types import type_name
from . import semantic as sem
from .control import run_inline
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import _bind


def _unpack(v, signed, axis, n):
    # kernel-language code, compiled in place by build_unpack_int4 (signed, axis, n: constexprs)
    w = xt.astype(v, xt.int32)
    lo = w & 15
    hi = (w >> 4) & 15
    if signed:
        lo = (lo ^ 8) - 8
        hi = (hi ^ 8) - 8
    lo = xt.astype(lo, xt.float16)
    hi = xt.astype(hi, xt.float16)
    if axis == 1:
        r = xt.arange(0, n)[:, None]
        c = xt.arange(0, 2 * n)[None, :]
        out = (xt.tile_mma(lo, xt.astype(xt.where(c == 2 * r, 1, 0), xt.float16))
               + xt.tile_mma(hi, xt.astype(xt.where(c == 2 * r + 1, 1, 0), xt.float16)))
    else:
        r = xt.arange(0, 2 * n)[:, None]
        c = xt.arange(0, n)[None, :]
        out = (xt.tile_mma(xt.astype(xt.where(r == 2 * c, 1, 0), xt.float16), lo)
               + xt.tile_mma(xt.astype(xt.where(r == 2 * c + 1, 1, 0), xt.float16), hi))
    return xt.astype(out, xt.int8)


@LANGUAGE.register("unpack_int4")
def build_unpack_int4(builder, node: ast.Call):
    args = _bind(builder, node)
    v = builder.visit(args["v"])
    signed = builder.constexpr(args["signed"], "signed") if "signed" in args else True
    axis = builder.constexpr(args["axis"], "axis") if "axis" in args else 1
    if not (sem.is_tile(v) and len(sem.shape_of(v)) == 2 and type_name(sem.elem_of(v)) in ("i8", "u8")):
        raise builder.error(args["v"], f"unpack_int4: v must be a 2-D int8 or uint8 tile of packed nibbles, got "
                            f"{describe(v)}")
    if not isinstance(signed, bool):
        raise builder.error(args["signed"], f"unpack_int4: signed must be True or False, got {signed!r}")
    if axis not in (0, 1, -1, -2):
        raise builder.error(args["axis"], f"unpack_int4: axis must be 0 or 1 (or -1, -2), got {axis!r}")
    axis %= 2
    n = sem.shape_of(v)[axis]
    cfg = builder.target.dpas_for("f16", "f16") if builder.target is not None else None
    if cfg is not None and n % cfg.k:
        raise builder.error(node, f"unpack_int4: v's length along axis {axis} must be a multiple of {cfg.k} (the K "
                            f"of the f16 tile_mma that interleaves the nibbles on {builder.target.name}), got "
                            f"{describe(v)}")
    env = {"v": v, "signed": signed, "axis": axis, "n": n}
    return run_inline(builder, _unpack, env)


__all__ = ["build_unpack_int4"]
