"""``xt.dot_scaled``: checks the operands, then compiles the kernel-language helpers below
in place, as a call of a ``@jit`` function is (docs/decisions/038-dot-scaled.md, 041)."""
from __future__ import annotations

import ast

import numpy as np
from xdsl.dialects.builtin import i1

from .. import language as xt
from ..dialects.types import type_name
from . import semantic as sem
from .control import run_inline
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import _bind

BLOCK = 32  #: K elements per e8m0 scale (OCP MX)
#: format -> the element types its operand may hold; "bf16"/"fp16" operands are never scaled
_FORMATS = {"e4m3": ("f8e4m3fn", "f8e5m2"), "e5m2": ("f8e4m3fn", "f8e5m2"), "e2m1": ("u8", "i8"),
            "bf16": ("bf16",), "fp16": ("f16",)}
_WHAT = {"e4m3": "xt.float8_e4m3fn or xt.float8_e5m2", "e5m2": "xt.float8_e4m3fn or xt.float8_e5m2",
         "e2m1": "uint8 bytes (two e2m1 codes each, packed along K)", "bf16": "xt.bfloat16", "fp16": "xt.float16"}
_NAN = float("nan")


def _decode(x, fp4, half, bf16):
    # kernel-language code: an operand's values, exact in f16 (bf16 when the other operand is bf16);
    # for e2m1 the low (half 0: even K) or high (half 1: odd K) nibbles of each byte
    if fp4:
        n = (xt.astype(x, xt.int32) >> (4 * half)) & 15
        e, m = (n & 7) >> 1, n & 1
        v = xt.where(e == 0, xt.astype(m, xt.float32) * 0.5, xt.astype((m + 2) << e, xt.float32) * 0.25)
        v = xt.where((n & 8) != 0, -v, v)
    else:
        v = x
    if bf16:
        r = xt.astype(v, xt.bfloat16)
    else:
        r = xt.astype(v, xt.float16)
    return r


def _partial(pa, pb, ma, mb, d, has_d, masked):
    # kernel-language code: d + the product of one K block (ma, mb: constant masks of the block's
    # columns of pa and rows of pb; whole DPAS blocks, so the XeGPU lowering keeps only the block's)
    if masked:
        p = xt.tile_mma(xt.where(ma, pa, 0.0), xt.where(mb, pb, 0.0))
    else:
        p = xt.tile_mma(pa, pb)
    if has_d:
        p = d + p
    return p


def _scale_of(s, mask, blocks, axis, transposed):
    # kernel-language code: block j's e8m0 codes (int32) as a column [M, 1] or row [1, N]
    si = xt.astype(s, xt.int32)
    if blocks > 1:
        si = xt.max(xt.where(mask, si, 0), axis=axis)
    if transposed:
        si = xt.transpose(si)
    return si


def _scaled(d, sa, sb, r, has_r, has_sa, has_sb):
    # kernel-language code: r + 2^(sa + sb - 254) d, exact (ldexp); an e8m0 255 is NaN
    if has_sa and has_sb:
        e = sa + sb - 254
    elif has_sa:
        e = sa - 127
    else:
        e = sb - 127
    v = xt.extern("ldexp", d, e, result=xt.float32, numpy_impl=np.ldexp)
    if has_sa and has_sb:
        v = xt.where((sa == 255) | (sb == 255), _NAN, v)
    elif has_sa:
        v = xt.where(sa == 255, _NAN, v)
    else:
        v = xt.where(sb == 255, _NAN, v)
    if has_r:
        v = r + v
    return v


def _shape(builder, v, what: str, node):
    if not (sem.is_tile(v) and len(sem.shape_of(v)) == 2):
        raise builder.error(node, f"dot_scaled: {what} must be a 2-D tile value, got {describe(v)}")
    return tuple(sem.shape_of(v)), type_name(sem.elem_of(v))


def _format(builder, args, key, default, node):
    fmt = builder.constexpr(args[key], key) if key in args else None
    fmt = default if fmt is None else fmt
    if fmt not in _FORMATS:
        raise builder.error(args.get(key, node), f"dot_scaled: {key} must be \"e4m3\", \"e5m2\", \"e2m1\", \"bf16\" "
                            f"or \"fp16\", got {fmt!r}")
    return fmt


def _mask(builder, shape, axis, lo, hi):
    """A constant i1 tile of ``shape``, true where the index along ``axis`` is in [lo, hi)."""
    idx = np.indices(shape)[axis]
    return sem.dense(builder, [bool(x) for x in ((idx >= lo) & (idx < hi)).ravel()], i1, shape)


@LANGUAGE.register("dot_scaled")
def build_dot_scaled(builder, node: ast.Call):
    args = _bind(builder, node)
    both = _format(builder, args, "format", "e4m3", node)
    fa, fb = (_format(builder, args, k, both, node) for k in ("a_format", "b_format"))
    vals = {k: builder.visit(args[k]) for k in ("a", "b")}
    scales = {k: (builder.visit(args[k]) if k in args else None) for k in ("a_scale", "b_scale")}
    acc = builder.visit(args["acc"]) if "acc" in args else None
    (m, ka), ta = _shape(builder, vals["a"], "a", node)
    (kb, n), tb = _shape(builder, vals["b"], "b", node)
    for name, fmt, t in (("a", fa, ta), ("b", fb, tb)):
        if t not in _FORMATS[fmt]:
            raise builder.error(args[name], f"dot_scaled({name[0]}_format={fmt!r}): {name} must hold {_WHAT[fmt]}, "
                                f"got {t}")
    fp4 = (fa == "e2m1", fb == "e2m1")
    if fp4[0] != fp4[1]:
        raise builder.error(node, f"dot_scaled: an e2m1 operand (two codes a byte along K) pairs only with another "
                            f"e2m1 operand here, got a_format={fa!r}, b_format={fb!r} (unpack the other side's "
                            f"K order first, or convert both to one family)")
    if "bf16" in (fa, fb) and "fp16" in (fa, fb):
        raise builder.error(node, "dot_scaled: bf16 and fp16 operands do not mix (DPAS takes one 16-bit type)")
    k = ka * (2 if fp4[0] else 1)
    if ka != kb or k % BLOCK:
        raise builder.error(node, f"dot_scaled(a_format={fa!r}, b_format={fb!r}): a must be [M, K] and b [K, N] "
                            f"({'[M, K/2] and [K/2, N] bytes for e2m1, ' if fp4[0] else ''}K a multiple of {BLOCK}); "
                            f"got a {m}x{ka} and b {kb}x{n}")
    nb = k // BLOCK
    for name, fmt in (("a_scale", fa), ("b_scale", fb)):
        if fmt in ("bf16", "fp16") and scales[name] is not None:
            raise builder.error(args[name], f"dot_scaled: a {fmt} operand is not scaled: {name} must be None")
    b_scale_row = False
    for name, rows in (("a_scale", m), ("b_scale", n)):
        s = scales[name]
        if s is None:
            continue
        shape, t = _shape(builder, s, name, node)
        if name == "b_scale" and shape == (nb, n) and shape != (n, nb):
            b_scale_row = True
        elif shape != (rows, nb) or t != "u8":
            raise builder.error(args[name], f"dot_scaled: {name} must be a [{rows}, {nb}] uint8 tile of e8m0 codes "
                                f"(one per row of {'a' if name == 'a_scale' else 'b^T'} and {BLOCK}-element K block)"
                                f"{'' if name == 'a_scale' else f', or [{nb}, {n}]'}, or None; got {describe(s)}")
        if t != "u8":
            raise builder.error(args[name], f"dot_scaled: {name} must hold uint8 e8m0 codes, got {describe(s)}")
    if acc is not None:
        shape, t = _shape(builder, acc, "acc", node)
        if shape != (m, n) or t != "f32":
            raise builder.error(args["acc"], f"dot_scaled: acc must be an [{m}, {n}] f32 tile or None, got "
                                f"{describe(acc)}")
    has_sa, has_sb = scales["a_scale"] is not None, scales["b_scale"] is not None
    bf16 = "bf16" in (fa, fb)
    if not fp4[0] and ta in _FORMATS["e4m3"] and tb in _FORMATS["e4m3"] and (nb == 1 or not (has_sa or has_sb)):
        pa, pb = [vals["a"]], [vals["b"]]  # fp8 x fp8 in one block: tile_mma converts in registers
    else:
        halves = 2 if fp4[0] else 1
        pa = [run_inline(builder, _decode, dict(x=vals["a"], fp4=fp4[0], half=h, bf16=bf16)) for h in range(halves)]
        pb = [run_inline(builder, _decode, dict(x=vals["b"], fp4=fp4[1], half=h, bf16=bf16)) for h in range(halves)]
    kc = tuple(sem.shape_of(pa[0]))[1]  # K columns of each decoded piece
    width = kc // nb
    if not (has_sa or has_sb):  # nothing scaled: one product over all of K
        d = acc
        for x, y in zip(pa, pb):
            d = run_inline(builder, _partial, dict(pa=x, pb=y, ma=None, mb=None, d=d, has_d=d is not None,
                                                   masked=False))
        return d
    r = acc
    for j in range(nb):
        lo, hi = j * width, (j + 1) * width
        ma = _mask(builder, (m, kc), 1, lo, hi) if nb > 1 else None
        mb = _mask(builder, (kc, n), 0, lo, hi) if nb > 1 else None
        d = None
        for x, y in zip(pa, pb):
            d = run_inline(builder, _partial, dict(pa=x, pb=y, ma=ma, mb=mb, d=d, has_d=d is not None,
                                                   masked=nb > 1))
        sa = sb = None
        if has_sa:
            sa = run_inline(builder, _scale_of, dict(s=scales["a_scale"], blocks=nb, axis=1, transposed=False,
                                                     mask=_mask(builder, (m, nb), 1, j, j + 1) if nb > 1 else None))
        if has_sb:
            shape = (nb, n) if b_scale_row else (n, nb)
            sb = run_inline(builder, _scale_of, dict(
                s=scales["b_scale"], blocks=nb, axis=0 if b_scale_row else 1, transposed=not b_scale_row,
                mask=_mask(builder, shape, 0 if b_scale_row else 1, j, j + 1) if nb > 1 else None))
        r = run_inline(builder, _scaled, dict(d=d, sa=sa, sb=sb, r=r, has_r=r is not None, has_sa=has_sa,
                                              has_sb=has_sb))
    return r


__all__ = ["BLOCK", "build_dot_scaled"]
