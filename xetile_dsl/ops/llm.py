"""The row ops of an LLM layer around its GEMMs and attention: ``rope``, ``silu_mul``
and ``add_rms_norm``.

* ``rope`` rotates q [tokens, heads, D] and k [tokens, kv_heads, D] in place (the first
  R = rotary_dim elements of each head), one program per token: it reads the token's
  position (a scalar read), computes the R/2 angles
  ``position * inv_freq`` and their cos/sin once in f32, and applies them to every head of
  q and then of k in blocks of heads.  ``inv_freq[i] = theta^(-2i/R)`` is an R/2 table made
  on the host in f64 and rounded to f32 once (cached per (R, theta)); the angles and
  cos/sin are in-kernel, so positions may be any int32 values, no table of positions.
  style "neox" reads the two halves of each head as two block tiles; "gptj" (interleaved
  pairs) gathers the even and odd elements and scatters them back.
* ``silu_mul`` (SwiGLU) reads each row's gate ``x[:, :n]`` and up ``x[:, n:]`` halves as
  two tiles per chunk of columns and writes ``silu(gate) * up``.
* ``add_rms_norm`` forms ``residual + x`` in f32, rounds it to the residual's dtype and
  takes the RMS norm of that rounded sum (so ``y`` is exactly ``rms_norm`` of the residual
  it returns): a first pass sums the squares, a second recomputes the sum, stores it into
  ``residual`` (in place, as vLLM's ``fused_add_rms_norm``) and writes ``y``; no chunk is
  read after this program wrote it.

All math is f32 whatever the input dtype (f16, bf16, f32); the choices are
docs/decisions/032-llm-row-ops.md."""
from __future__ import annotations

import functools

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .rows import _param, _rows, _xt

ROPE_STYLES = ("neox", "gptj")
#: the rotated widths (rotary_dim: the whole head unless partial) whose halves are tiles
ROPE_ROTARY_DIMS = (16, 32, 64, 128, 256)
#: head dims: multiples of ROPE_HEAD_DIM_MULTIPLE up to ROPE_MAX_HEAD_DIM
ROPE_HEAD_DIM_MULTIPLE, ROPE_MAX_HEAD_DIM = 16, 512
#: heads per block tile of ``rope`` (a tuning choice, not a hardware fact: 8 heads x D/2
#: columns is one 2D block on PVC for D = 64 f16)
ROPE_HEADS = 8


@xd.jit
def _rotate_halves(x, t, H, c, s, OUT: xt.constexpr, BH: xt.constexpr, HALF: xt.constexpr):
    """Rotate the halves of the first 2 HALF elements of every head of ``x[t]`` [H, D],
    BH heads a block tile: (x[i], x[i + HALF]) <- (x[i] c_i - x[i + HALF] s_i,
    x[i + HALF] c_i + x[i] s_i)."""
    for h in range(0, H, BH):
        t1 = xt.init_tile(x[t], [h, 0], [BH, HALF])
        t2 = xt.init_tile(x[t], [h, HALF], [BH, HALF])
        x1 = xt.astype(xt.load_tile(t1), xt.float32)
        x2 = xt.astype(xt.load_tile(t2), xt.float32)
        xt.store_tile(xt.astype(x1 * c - x2 * s, OUT), t1)
        xt.store_tile(xt.astype(x2 * c + x1 * s, OUT), t2)


@xd.jit
def rope_neox_kernel(q, k, pos, inv_freq, HQ, HK, OUT: xt.constexpr, BH: xt.constexpr, HALF: xt.constexpr):
    """Rotate the halves of the first 2 HALF elements of every head of token t =
    program_id(0) of q [T, HQ, D] and k [T, HK, D]: for i < HALF, (x[i], x[i + HALF]) <-
    (x[i] c_i - x[i + HALF] s_i, x[i + HALF] c_i + x[i] s_i) with c_i, s_i the cos and sin
    of pos[t] * inv_freq[i]; elements from 2 HALF on are not touched."""
    t = xt.program_id(0)
    angle = xt.astype(pos[t], xt.float32) * xt.load_tile(xt.init_tile(inv_freq, [0], [HALF]))
    c = xt.cos(angle)
    s = xt.sin(angle)
    _rotate_halves(q, t, HQ, c, s, OUT, BH, HALF)
    _rotate_halves(k, t, HK, c, s, OUT, BH, HALF)


@xd.jit
def _rotate_pairs(x, t, H, D, c, s, pair, head, OUT: xt.constexpr, BH: xt.constexpr):
    """Rotate the interleaved pairs of the heads of token t in ``x`` [T * H, D]: the even
    and odd elements of BH heads (``pair``: the [1, HALF] even columns, ``head``: the
    [BH, 1] heads of a block) are gathered, (x[2i], x[2i + 1]) <- (x[2i] c_i -
    x[2i + 1] s_i, x[2i + 1] c_i + x[2i] s_i), and scattered back."""
    for h in range(0, H, BH):
        even = (head + (t * H + h)) * D + pair
        keep = even < (t + 1) * H * D
        te = xt.init_tile(x, even)
        to = xt.init_tile(x, even + 1)
        x1 = xt.astype(xt.load_gather(te, keep), xt.float32)
        x2 = xt.astype(xt.load_gather(to, keep), xt.float32)
        xt.store_scatter(xt.astype(x1 * c - x2 * s, OUT), te, keep)
        xt.store_scatter(xt.astype(x2 * c + x1 * s, OUT), to, keep)


@xd.jit
def rope_gptj_kernel(q, k, pos, inv_freq, HQ, HK, D, OUT: xt.constexpr, BH: xt.constexpr, HALF: xt.constexpr):
    """The interleaved form on q [T * HQ, D] and k [T * HK, D] (contiguous): for i < HALF,
    (x[2i], x[2i + 1]) <- (x[2i] c_i - x[2i + 1] s_i, x[2i + 1] c_i + x[2i] s_i); the even
    and odd elements of BH heads are gathered, rotated and scattered back."""
    t = xt.program_id(0)
    angle = xt.astype(pos[t], xt.float32) * xt.load_tile(xt.init_tile(inv_freq, [0], [HALF]))
    c = xt.cos(angle)
    s = xt.sin(angle)
    pair = xt.arange(0, HALF)[None, :] * 2
    head = xt.arange(0, BH)[:, None]
    _rotate_pairs(q, t, HQ, D, c, s, pair, head, OUT, BH)
    _rotate_pairs(k, t, HK, D, c, s, pair, head, OUT, BH)


@xd.jit
def silu_mul_kernel(x, y, N, OUT: xt.constexpr, BM: xt.constexpr, BC: xt.constexpr):
    """y[:, :N] = silu(x[:, :N]) * x[:, N:2N], silu(a) = a / (1 + exp(-a)), in chunks of BC
    columns (the gate tile's columns past N are never stored: y has N columns)."""
    row = xt.program_id(0) * BM
    ta = xt.init_tile(x, [row, 0], [BM, BC])
    tb = xt.init_tile(x, [row, N], [BM, BC])
    ty = xt.init_tile(y, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        a = xt.astype(xt.load_tile(ta), xt.float32)
        b = xt.astype(xt.load_tile(tb), xt.float32)
        xt.store_tile(xt.astype(a / (1.0 + xt.exp(-a)) * b, OUT), ty)
        ta = xt.update_tile_offset(ta, 0, BC)
        tb = xt.update_tile_offset(tb, 0, BC)
        ty = xt.update_tile_offset(ty, 0, BC)


@xd.jit
def add_rms_norm_kernel(x, r, w, y, N, eps, RES: xt.constexpr, OUT: xt.constexpr,
                        BM: xt.constexpr, BC: xt.constexpr):
    """s = RES(x + r) (the f32 sum rounded to r's dtype); r <- s; y = s / sqrt(mean(s^2) + eps) * w
    per row of [:, :N]: pass 1 sums the squares of s, pass 2 recomputes s from x and r
    (each chunk of r is read before this program overwrites it), stores it and y."""
    row = xt.program_id(0) * BM
    squares = xt.zeros([BM, 1], xt.float32)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    tr = xt.init_tile(r, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        cols = xt.arange(0, BC) + c
        v = xt.astype(xt.load_tile(tx), xt.float32) + xt.astype(xt.load_tile(tr), xt.float32)
        v = xt.where(cols < N, xt.astype(xt.astype(v, RES), xt.float32), 0.0)
        squares = squares + xt.sum(v * v, axis=1)
        tx = xt.update_tile_offset(tx, 0, BC)
        tr = xt.update_tile_offset(tr, 0, BC)
    rstd = xt.rsqrt(squares / N + eps)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    tr = xt.init_tile(r, [row, 0], [BM, BC])
    ty = xt.init_tile(y, [row, 0], [BM, BC])
    tw = xt.init_tile(w, [0], [BC])
    for c in range(0, N, BC):
        v = xt.astype(xt.astype(xt.load_tile(tx), xt.float32) + xt.astype(xt.load_tile(tr), xt.float32), RES)
        xt.store_tile(v, tr)
        z = xt.astype(v, xt.float32) * rstd * xt.astype(xt.load_tile(tw), xt.float32)
        xt.store_tile(xt.astype(z, OUT), ty)
        tx = xt.update_tile_offset(tx, 0, BC)
        tr = xt.update_tile_offset(tr, 0, BC)
        ty = xt.update_tile_offset(ty, 0, BC)
        tw = xt.update_tile_offset(tw, BC)


# --- entry points ------------------------------------------------------------------------

def rope(q, k, positions, theta: float = 10000.0, style: str = "neox", rotary_dim: int | None = None, *,
         target: str | None = None):
    """Rotary position embeddings applied IN PLACE to ``q`` [tokens, heads, D] and ``k``
    [tokens, kv_heads, D] (or [batch, seq, heads, D], contiguous, flattened to tokens),
    ``positions`` [tokens] (or [batch, seq]) integers; returns ``(q, k)``, the same arrays.

    Pair i of token t turns by ``positions[t] * theta^(-2i/R)`` radians (the angle in f32,
    exact positions below 2^24), R = ``rotary_dim`` (default: the head dim D; a partial R
    rotates the first R elements of each head and leaves the rest); ``style="neox"`` pairs
    x[i] with x[i + R/2] (GPT-NeoX, Llama), ``"gptj"`` x[2i] with x[2i + 1].  R is 16, 32,
    64, 128 or 256, D a multiple of 16 up to 512; q and k have one dtype (f16, bf16, f32).

    Example: ``q, k = ops.rope(q, k, np.arange(q.shape[0], dtype=np.int32))``"""
    q4, k4, pos, dtype, D, R, writeback = _rope_operands(q, k, positions, style, rotary_dim)
    target = configs.resolve_target(target, q4)
    inv_freq = operands.host_like_input(_inv_freq(R, float(theta)), pos)
    tokens, hq, hk = q4.shape[0], q4.shape[1], k4.shape[1]
    consts = {"OUT": _xt(dtype), "BH": ROPE_HEADS, "HALF": R // 2}
    if style == "neox":
        rope_neox_kernel.on(target)[(tokens,)](q4, k4, pos, inv_freq, hq, hk, **consts)
    else:
        rope_gptj_kernel.on(target)[(tokens,)](q4.reshape(tokens * hq, D), k4.reshape(tokens * hk, D), pos, inv_freq,
                                               hq, hk, D, **consts)
    for original, rotated in writeback:
        np.copyto(original, rotated.reshape(original.shape))
    return q, k


def rope_check(q, k, positions, theta: float = 10000.0, style: str = "neox", rotary_dim: int | None = None) -> None:
    """The UsageErrors :func:`rope` raises, without running (for the torch fake)."""
    _rope_operands(q, k, positions, style, rotary_dim)
    _inv_freq(ROPE_ROTARY_DIMS[0], float(theta))


def silu_mul(x, *, out=None, target: str | None = None):
    """SwiGLU's gate: ``silu(x[..., :n]) * x[..., n:]`` for ``x`` [..., 2n] (f16, bf16,
    f32; silu(a) = a * sigmoid(a), in f32), a new [..., n] array of x's dtype and library
    (or ``out=``).

    Example: ``h = ops.silu_mul(np.ones((3, 8), np.float16))   # [3, 4]``"""
    x2, shape, dtype = _silu_operands(x)
    n = x2.shape[1] // 2
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    if out is not None:
        operands.check_out(out, shape[:-1] + (n,), dtype)
        if _strided_numpy(out):
            np.copyto(out, silu_mul(x, target=target))
            return out
    buffer, result = operands.output_buffer(None if out is None else out.reshape(x2.shape[0], n),
                                            x2, (x2.shape[0], n), dtype)
    silu_mul_kernel.on(target)[(-(-x2.shape[0] // BM),)](
        operands.fit_rows(x2, "x"), buffer, n, OUT=_xt(dtype), BM=BM, BC=BC)
    operands.copy_back(buffer, result)
    return out if out is not None else result.reshape(shape[:-1] + (n,))


def silu_mul_result(x) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of what :func:`silu_mul` returns, checked as it checks them."""
    x2, shape, dtype = _silu_operands(x)
    return shape[:-1] + (shape[-1] // 2,), dtype


def add_rms_norm(x, residual, weight, eps: float = 1e-6, *, out=None, target: str | None = None):
    """The residual add and RMS norm of a transformer layer:
    ``residual <- x + residual`` (IN PLACE, rounded to residual's dtype: vLLM's
    ``fused_add_rms_norm`` convention) and ``y = rms_norm(residual) * weight``; returns
    ``(y, residual)``.  ``x`` and ``residual`` have one shape [..., N] and dtype (f16, bf16,
    f32), ``weight`` is [N]; ``y`` is a new array like ``x`` (or ``out=``; ``out=x``
    overwrites x, as vLLM does).  f32 math; the norm is of the rounded sum.

    Example: ``y, residual = ops.add_rms_norm(h, residual, w, 1e-6)``"""
    x2, r2, shape, dtype, w, writeback = _add_norm_operands(x, residual, weight)
    N = x2.shape[1]
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    if out is not None:
        operands.check_out(out, shape, dtype)
        if _strided_numpy(out):
            y, _ = add_rms_norm(x, residual, weight, eps, target=target)
            np.copyto(out, y)
            return out, residual
    buffer, result = operands.output_buffer(None if out is None else out.reshape(x2.shape), x2, x2.shape, dtype)
    r_fit = operands.fit_rows(r2, "residual")
    add_rms_norm_kernel.on(target)[(-(-x2.shape[0] // BM),)](
        operands.fit_rows(x2, "x"), r_fit, w, buffer, N, float(eps), RES=_xt(dtype), OUT=_xt(dtype), BM=BM, BC=BC)
    operands.copy_back(r_fit, r2)
    if writeback is not None:
        np.copyto(residual, r2.reshape(shape))
    operands.copy_back(buffer, result)
    return (out if out is not None else result.reshape(shape)), residual


def add_rms_norm_check(x, residual, weight) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of :func:`add_rms_norm`'s ``y``, checked as it checks them."""
    _, _, shape, dtype, _, _ = _add_norm_operands(x, residual, weight)
    return shape, dtype


# --- operand checks ------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def _inv_freq_cached(R: int, theta: float) -> np.ndarray:
    table = (theta ** (-np.arange(0, R, 2, dtype=np.float64) / R)).astype(np.float32)
    table.flags.writeable = False
    return table


def _inv_freq(R: int, theta: float) -> np.ndarray:
    """theta^(-2i/R) for i < R/2, in f64 rounded once to f32 (a copy: launches write back)."""
    if not (theta > 0 and np.isfinite(theta)):
        raise UsageError(f"rope: theta must be a positive finite number, got {theta}")
    return _inv_freq_cached(R, theta).copy()


def _rope_operands(q, k, positions, style, rotary_dim):
    """(q, k as [T, H, D] arrays the kernel writes, positions [T] int32, dtype, D, the
    rotary dim R, the (caller's array, contiguous copy) pairs to copy back after the launch)."""
    if style not in ROPE_STYLES:
        raise UsageError(f"rope: style {style!r}; supported: 'neox' (rotate halves) or 'gptj' (interleaved pairs)")
    writeback = []
    arrays = []
    for name, a in (("q", q), ("k", k)):
        if not hasattr(a, "shape") or not hasattr(a, "dtype"):
            raise UsageError(f"rope: {name} must be an array (rope writes it in place), got {type(a).__name__}")
        if len(a.shape) not in (3, 4):
            raise UsageError(f"rope: {name} must be [tokens, heads, D] or [batch, seq, heads, D], got shape "
                             f"{tuple(a.shape)}")
        arrays.append(a)
    q, k = arrays
    dtype = operands.dtype_of(q)
    if operands.dtype_of(k) != dtype or (dtype != operands.BF16 and dtype.name not in ("float16", "float32")):
        raise UsageError(f"rope: q and k must have one dtype of float16, bfloat16, float32, got "
                         f"{dtype} and {operands.dtype_of(k)}")
    lead = tuple(q.shape[:-2])
    D = q.shape[-1]
    if (D % ROPE_HEAD_DIM_MULTIPLE or not 0 < D <= ROPE_MAX_HEAD_DIM or k.shape[-1] != D
            or tuple(k.shape[:-2]) != lead or len(k.shape) != len(q.shape)):
        raise UsageError(f"rope: q {tuple(q.shape)} and k {tuple(k.shape)} need the same leading dims and one head "
                         f"dim D, a multiple of {ROPE_HEAD_DIM_MULTIPLE} up to {ROPE_MAX_HEAD_DIM}")
    R = D if rotary_dim is None else rotary_dim
    if R not in ROPE_ROTARY_DIMS or R > D:
        raise UsageError(f"rope: rotary_dim {R} (the rotated width; default the head dim {D}) must be one of "
                         f"{ROPE_ROTARY_DIMS} and at most the head dim")
    if 0 in q.shape or 0 in k.shape:
        raise UsageError(f"rope: empty input (q {tuple(q.shape)}, k {tuple(k.shape)})")
    pos = _int32_positions(operands.as_array(positions, "positions"))
    if tuple(pos.shape) != lead or operands.dtype_of(pos).kind not in "iu":
        raise UsageError(f"rope: positions must be integers of shape {lead} (q's leading dims), got "
                         f"{operands.dtype_of(pos)} {tuple(pos.shape)}")
    if isinstance(pos, np.ndarray):
        if pos.size and (pos.min() < np.iinfo(np.int32).min or pos.max() > np.iinfo(np.int32).max):
            raise UsageError("rope: positions must fit int32")
        pos = np.ascontiguousarray(pos.reshape(-1), np.int32)
    else:
        pos = pos.reshape(-1)
    tokens = int(np.prod(lead, dtype=np.int64))
    if style == "gptj" and max(q.shape[-2], k.shape[-2]) * tokens * D >= 2 ** 31:
        raise UsageError("rope: style 'gptj' addresses q and k with 32-bit element offsets: at most 2^31 elements "
                         "each (split the tokens)")
    flat = []
    for a in (q, k):
        if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
            c = np.ascontiguousarray(a)
            writeback.append((a, c))
            a = c
        elif not isinstance(a, np.ndarray) and not _contiguous(a):
            raise UsageError("rope: device q and k must be contiguous (rope writes them in place)")
        flat.append(a.reshape(tokens, a.shape[-2], D))
    return flat[0], flat[1], pos, dtype, D, R, writeback


def _int32_positions(pos):
    """Device positions as int32 on their queue (torch models keep them int64: one device
    conversion); numpy ones are checked and converted by the caller."""
    if isinstance(pos, np.ndarray):
        return pos
    if operands.is_torch(pos):
        import torch  # optional dependency: only reached with a torch tensor in hand
        if not pos.dtype.is_floating_point and not pos.dtype.is_complex and pos.dtype != torch.bool:
            return pos if pos.dtype == torch.int32 else pos.to(torch.int32)
        return pos
    dtype = np.dtype(pos.dtype)
    return pos.astype(np.int32) if dtype.kind in "iu" and dtype != np.int32 else pos


def _strided_numpy(a) -> bool:
    """A numpy ``out=`` whose reshape would be a copy: written through a new result."""
    return isinstance(a, np.ndarray) and not a.flags.c_contiguous


def _contiguous(a) -> bool:
    if operands.is_torch(a):
        return a.is_contiguous()
    flags = getattr(a, "flags", None)
    return bool(getattr(flags, "c_contiguous", True))


def _silu_operands(x):
    x2, shape, dtype = _rows(x, -1, "silu_mul")
    if shape[-1] % 2:
        raise UsageError(f"silu_mul: the last dimension must be even (gate and up halves), got shape {shape}")
    return x2, shape, dtype


def _add_norm_operands(x, residual, weight):
    x2, shape, dtype = _rows(x, -1, "add_rms_norm")
    if not hasattr(residual, "shape") or tuple(residual.shape) != shape or operands.dtype_of(residual) != dtype:
        what = (f"{operands.dtype_of(residual)} {tuple(residual.shape)}" if hasattr(residual, "shape")
                else type(residual).__name__)
        raise UsageError(f"add_rms_norm: residual must be an array like x ({dtype} {shape}), updated in place; "
                         f"got {what}")
    writeback = None
    if isinstance(residual, np.ndarray) and not residual.flags.c_contiguous:
        writeback = residual
        residual = np.ascontiguousarray(residual)
    elif not isinstance(residual, np.ndarray) and not _contiguous(residual):
        raise UsageError("add_rms_norm: a device residual must be contiguous (it is updated in place)")
    r2 = residual.reshape(x2.shape)
    w = _param(weight, x2.shape[1], "weight", "add_rms_norm").reshape(-1)   # 1-D: read with 2D blocks
    return x2, r2, shape, dtype, w, writeback
