"""``ops.attention``: flash attention forward, softmax(q k^T * scale) v per (batch, head).

Each program owns BM queries of one head and walks the keys in blocks of BN, transposed
(keys x queries, so the per-query reductions stay inside each lane): S^T = K Q^T on DPAS
(Q^T read once through an ``order=(0, 1)`` tile), the online softmax in base 2 (scores pre-multiplied by scale * log2(e), so every
exponential is one ``exp2``; the running maximum m and sum l rescale the accumulator by
``exp2(m_old - m_new)``, lazily: only in steps where m grows by more than RESCALE_SLACK), then O^T = V^T P^T on DPAS with P^T converted to the input dtype
(V^T and the O^T store through ``order=(0, 1)`` tiles).  Causal
attention stops the key loop at the block's last query (later blocks would be fully
masked) and masks the diagonal block.  [Z, H, N, D] arrays are viewed as [Z * H * N, D];
keys past N are masked, so a head's padding never mixes with the next head."""
from __future__ import annotations

import functools
import math

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .matmul import XT_DTYPES
from .rows import NEG_BIG

HEAD_DIMS = (32, 64, 128)
INPUTS = ("float16", "bfloat16")


#: lazy rescaling (as FlashAttention-4): the running maximum m, and with it the O^T and sum
#: rescale, moves only when some query's block maximum passes m by more than this (log2
#: units); so p = exp2(s - m) < 2^8, which f16 holds as precisely (relatively) as p <= 1,
#: and O^T / sum, which share m, are unchanged in exact arithmetic
RESCALE_SLACK = 8.0
#: ln(2): the kernels' base-2 log-sum-exp times LN2 is the natural-log one ``return_lse`` gives
LN2 = math.log(2.0)


@xd.jit
def _block_max(s, qk_scale, SCALED: xt.constexpr):
    """The [1, queries] maximum of the scaled scores of ``s`` = S^T [keys, queries] (already
    multiplied by ``qk_scale`` when SCALED, else unscaled with ``qk_scale`` > 0)."""
    if SCALED:
        return xt.tile_reduce("maxnumf", s, 0)
    return xt.tile_reduce("maxnumf", s, 0) * qk_scale


@xd.jit
def _exponents(s, m, qk_scale, SCALED: xt.constexpr):
    """s * scale - m (unscaled s: one fma with the subtraction)."""
    if SCALED:
        return s - m
    return xt.fma(s, qk_scale, -m)


@xd.jit
def _first_step(s, tv, qk_scale, OUT: xt.constexpr, D: xt.constexpr, SCALED: xt.constexpr):
    """The first key block (``s`` masked if it needs it): m is its maximum, nothing to rescale."""
    m = _block_max(s, qk_scale, SCALED)
    p = xt.exp2(_exponents(s, m, qk_scale, SCALED))
    acc = xt.tile_mma(xt.load_tile(tv), xt.astype(p, OUT), xt.zeros([D, s.shape[1]], xt.float32))
    return m, xt.sum(p, axis=0), acc


@xd.jit
def _softmax_step(s, m, s_sum, acc, tv, qk_scale, OUT: xt.constexpr, SCALED: xt.constexpr):
    """One later key block of the online softmax, transposed: ``s`` = S^T (masked), ``m`` /
    ``s_sum`` the running [1, queries] maximum and sum of the scaled scores, ``acc`` = O^T.
    The rescale runs only when some query's block maximum passes m + RESCALE_SLACK: one
    subgroup-uniform branch, which the common step skips with the D * BM / 16 multiplies.
    The exponents are taken before the branch and shifted in it (s must not live across
    the branch: IGC then copied the S^T registers every step, 52 moves at D = 64)."""
    m_blk = _block_max(s, qk_scale, SCALED)
    x = _exponents(s, m, qk_scale, SCALED)
    if xt.tile_reduce("maxnumf", m_blk - m, 1) > RESCALE_SLACK:
        shift = m - xt.maximum(m, m_blk)
        x = x + shift
        alpha = xt.exp2(shift)
        s_sum = s_sum * alpha
        acc = acc * alpha
        m = m - shift
    p = xt.exp2(x)
    s_sum = s_sum + xt.sum(p, axis=0)
    acc = xt.tile_mma(xt.load_tile(tv), xt.astype(p, OUT), acc)
    return m, s_sum, acc


@xd.jit
def _masked(s, start, N, qblk, BN: xt.constexpr, BM: xt.constexpr, CAUSAL: xt.constexpr):
    """S^T of the keys [start, start + BN) with -inf for keys past N and, causal, for keys
    after their query (key start + j is after query qblk + i when j - i > qblk - start)."""
    keys = xt.transpose(xt.arange(0, BN))
    s = xt.where(keys < N - start, s, float("-inf"))
    if CAUSAL:
        s = xt.where(keys - xt.arange(0, BM) <= qblk - start, s, float("-inf"))
    return s


@xd.jit
def attention_kernel(q, k, v, o, lse, N, NP, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                     D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, SCALED: xt.constexpr):
    """o = softmax(q k^T * qk_scale / log2(e)) v for the head program_id(1) (rows
    [head * NP, head * NP + N) of the [Z * H * NP, D] views) and queries
    [program_id(0) * BM, + BM); qk_scale includes log2(e).

    Computed transposed (keys x queries), so the softmax reductions over keys run down
    each lane's column instead of across lanes: S^T = K Q^T, O^T = V^T P^T (P^T, a
    tile_mma result, is the second product's operand B: lowering/rewrites/mma_relayout.py).
    The first key block runs before the loop (it sets the running maximum); the key loop
    covers the next blocks that need no mask; the one block that does (keys past N, or
    the causal diagonal: BN a multiple of BM makes it one block) follows, unless it was
    the first.  SCALED = False (for qk_scale > 0 only) leaves the scores unscaled
    until the exp2's fma.  with_lse != 0: also store each query's natural-log log-sum-exp of the
    scaled scores in row program_id(1) of the f32 [Z * H, N] ``lse`` (which is not read or written otherwise)."""
    base = xt.program_id(1) * NP
    _attention_body(q, k, v, o, lse, xt.program_id(1), base, N, qk_scale, with_lse, CAUSAL, OUT, D, BM, BN, SCALED)


@xd.jit
def attention_nd_kernel(q, k, v, o, lse, N, H, G, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                        D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, SCALED: xt.constexpr):
    """:func:`attention_kernel` on [Z, H, N, D] arrays of any strides (unit stride in D):
    program_id(1) = z * H + h picks the head, whose [N, D] slices ``q[z, h]`` ... the
    tiles address in place (no padding: keys past N read as zeros and are masked,
    queries past N are not stored).  k and v have H / G heads (grouped-query attention:
    query head h reads key/value head h // G); ``lse`` is [Z, H, N] (with_lse)."""
    head = xt.program_id(1)
    z = head // H
    h = head - z * H
    _attention_body(q[z, h], k[z, h // G], v[z, h // G], o[z, h], lse[z], h, 0, N, qk_scale, with_lse, CAUSAL, OUT,
                    D, BM, BN, SCALED)


@xd.jit
def _program_sequence(cu_seqlens, H):
    """(h, start, N) of a varlen program, program_id(1) = b * H + h: its head, and the
    first row and length of sequence b in the packed arrays."""
    head = xt.program_id(1)
    b = head // H
    start = cu_seqlens[b]
    return head - b * H, start, cu_seqlens[b + 1] - start


@xd.jit
def attention_varlen_kernel(q, k, v, o, lse, cu_seqlens, H, G, qk_scale, with_lse, CAUSAL: xt.constexpr,
                            OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                            SCALED: xt.constexpr):
    """:func:`attention_kernel` over packed variable-length sequences: q, k, v, o are
    [H(_kv), total, D] views of the packed [total, H(_kv), D] arrays, sequence b the rows
    [cu_seqlens[b], cu_seqlens[b + 1]); program_id(1) = b * H + h, program_id(0) the query
    block (programs past their sequence's end do nothing).  The stores keep only the
    sequence's rows (a column edge mask on the O^T tile), so a partial block never writes
    into the next sequence; ``lse`` is [H, total] (with_lse)."""
    h, start, N = _program_sequence(cu_seqlens, H)
    if xt.program_id(0) * BM < N:
        _attention_body(q[h], k[h // G], v[h // G], o[h], lse, h, start, N, qk_scale, with_lse, CAUSAL, OUT,
                        D, BM, BN, SCALED, True)


@xd.jit
def _attention_body(q, k, v, o, lse, lse_row, base, N, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                    D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, SCALED: xt.constexpr,
                    BOUNDED: xt.constexpr = False):
    """The transposed flash attention of one head: rows [base, base + N) of the 2-D
    arrays (or slices) q, k, v, o, queries [program_id(0) * BM, + BM); with_lse: the
    log-sum-exp (natural log: m and the sum are base 2) into row ``lse_row`` of ``lse``."""
    qblk = xt.program_id(0) * BM
    tq = xt.init_tile(q, [0, base + qblk], [D, BM], order=(0, 1))   # Q^T: [D, queries]
    tk = xt.init_tile(k, [base, 0], [BN, D])                                       # K: [keys, D]
    tv = xt.init_tile(v, [0, base], [D, BN], order=(0, 1))                         # V^T: [D, keys]
    end = N
    unmasked = N // BN * BN
    if CAUSAL:
        end = qblk + BM
        unmasked = (qblk + 1) // BN * BN  # blocks whose last key is at most the first query
    m = xt.full([1, BM], NEG_BIG, xt.float32)
    s_sum = xt.zeros([1, BM], xt.float32)
    acc = xt.zeros([D, BM], xt.float32)                                            # O^T
    if N > 0:  # (always, from ops.attention) a block of its own, so K's loads stay coalesced
        s = _masked(_scores(tk, tq, qk_scale, BN, BM, SCALED), 0, N, qblk, BN, BM, CAUSAL)
        m, s_sum, acc = _first_step(s, tv, qk_scale, OUT, D, SCALED)
    tk = xt.update_tile_offset(tk, BN, 0)
    tv = xt.update_tile_offset(tv, 0, BN)
    for start in range(BN, unmasked, BN):
        s = _scores(tk, tq, qk_scale, BN, BM, SCALED)
        m, s_sum, acc = _softmax_step(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
        tk = xt.update_tile_offset(tk, BN, 0)
        tv = xt.update_tile_offset(tv, 0, BN)
    if BN <= unmasked and unmasked < end:
        s = _masked(_scores(tk, tq, qk_scale, BN, BM, SCALED), unmasked, N, qblk, BN, BM, CAUSAL)
        m, s_sum, acc = _softmax_step(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
    if BOUNDED:   # the rows past N belong to the next sequence: keep only the queries < N
        kept = xt.arange(0, BM) < N - qblk
        xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o, [0, base + qblk], [D, BM], order=(0, 1)),
                      mask=kept)
        if with_lse != 0:
            xt.store_tile((m + xt.log2(s_sum)) * LN2, xt.init_tile(lse, [lse_row, base + qblk], [1, BM]),
                          mask=kept)
    else:
        xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o, [0, base + qblk], [D, BM], order=(0, 1)))
        if with_lse != 0:   # (a runtime flag: one compiled kernel with and without it)
            xt.store_tile((m + xt.log2(s_sum)) * LN2, xt.init_tile(lse, [lse_row, qblk], [1, BM]))


@xd.jit
def _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT: xt.constexpr, SCALED: xt.constexpr):
    """:func:`_softmax_step` with acc = O [queries, D] and O += P V, V operand B: P =
    transpose(P^T) is operand A (the compiler stages it through SLM), the rescale's alpha
    reaches O's rows transposed."""
    m_blk = _block_max(s, qk_scale, SCALED)
    x = _exponents(s, m, qk_scale, SCALED)
    if xt.tile_reduce("maxnumf", m_blk - m, 1) > RESCALE_SLACK:
        shift = m - xt.maximum(m, m_blk)
        x = x + shift
        alpha = xt.exp2(shift)
        s_sum = s_sum * alpha
        acc = acc * xt.transpose(alpha)
        m = m - shift
    p = xt.exp2(x)
    s_sum = s_sum + xt.sum(p, axis=0)
    acc = xt.tile_mma(xt.transpose(xt.astype(p, OUT)), xt.load_tile(tv), acc)
    return m, s_sum, acc


@xd.jit
def attention_vnni_kernel(q, k, v, o, lse, N, NP, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                          D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, SCALED: xt.constexpr):
    """:func:`attention_kernel` with the second product untransposed, O = P V, V a VNNI
    operand B read by plain block messages (no de-interleave of a transposed V^T): the
    form of ``configs.attention_vnni_tiles`` (bmg at D = 128)."""
    base = xt.program_id(1) * NP
    _attention_vnni_body(q, k, v, o, lse, xt.program_id(1), base, N, qk_scale, with_lse, CAUSAL, OUT, D, BM, BN,
                         SCALED)


@xd.jit
def attention_vnni_nd_kernel(q, k, v, o, lse, N, H, G, qk_scale, with_lse, CAUSAL: xt.constexpr,
                             OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                             SCALED: xt.constexpr):
    """:func:`attention_vnni_kernel` on [Z, H, N, D] arrays, as :func:`attention_nd_kernel`."""
    head = xt.program_id(1)
    z = head // H
    h = head - z * H
    _attention_vnni_body(q[z, h], k[z, h // G], v[z, h // G], o[z, h], lse[z], h, 0, N, qk_scale, with_lse, CAUSAL,
                         OUT, D, BM, BN, SCALED)


@xd.jit
def _attention_vnni_body(q, k, v, o, lse, lse_row, base, N, qk_scale, with_lse, CAUSAL: xt.constexpr,
                         OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                         SCALED: xt.constexpr):
    """:func:`_attention_body` with O = P V: S^T = K Q^T and the softmax down the lanes as
    there, the first block a step from its own maximum (its rescale branch not taken; a
    peeled first step as _first_step spilled 640 B at D = 128, 16 x 64 on bmg)."""
    qblk = xt.program_id(0) * BM
    tq = xt.init_tile(q, [0, base + qblk], [D, BM], order=(0, 1))   # Q^T: [D, queries]
    tk = xt.init_tile(k, [base, 0], [BN, D])                         # K: [keys, D]
    tv = xt.init_tile(v, [base, 0], [BN, D])                         # V: [keys, D], operand B
    end = N
    unmasked = N // BN * BN
    if CAUSAL:
        end = qblk + BM
        unmasked = (qblk + 1) // BN * BN
    m = xt.full([1, BM], NEG_BIG, xt.float32)
    s_sum = xt.zeros([1, BM], xt.float32)
    acc = xt.zeros([BM, D], xt.float32)                              # O
    if N > 0:
        s = _masked(_scores(tk, tq, qk_scale, BN, BM, SCALED), 0, N, qblk, BN, BM, CAUSAL)
        m = _block_max(s, qk_scale, SCALED)   # (NEG_BIG in the fma would drop s's bits)
        m, s_sum, acc = _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
    tk = xt.update_tile_offset(tk, BN, 0)
    tv = xt.update_tile_offset(tv, BN, 0)
    for start in range(BN, unmasked, BN):
        s = _scores(tk, tq, qk_scale, BN, BM, SCALED)
        m, s_sum, acc = _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
        tk = xt.update_tile_offset(tk, BN, 0)
        tv = xt.update_tile_offset(tv, BN, 0)
    if BN <= unmasked and unmasked < end:
        s = _masked(_scores(tk, tq, qk_scale, BN, BM, SCALED), unmasked, N, qblk, BN, BM, CAUSAL)
        m, s_sum, acc = _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
    xt.store_tile(xt.astype(acc / xt.transpose(s_sum), OUT), xt.init_tile(o, [base + qblk, 0], [BM, D]))
    if with_lse != 0:
        xt.store_tile((m + xt.log2(s_sum)) * LN2, xt.init_tile(lse, [lse_row, qblk], [1, BM]))


@xd.jit
def _scores(tk, tq, qk_scale, BN: xt.constexpr, BM: xt.constexpr, SCALED: xt.constexpr):
    """S^T = K Q^T of the keys under ``tk`` (times ``qk_scale`` when SCALED)."""
    s = xt.tile_mma(xt.load_tile(tk), xt.load_tile(tq), xt.zeros([BN, BM], xt.float32))
    if SCALED:
        s = s * qk_scale
    return s


@xd.jit
def attention_rows_kernel(q, k, v, o, lse, N, NP, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                          D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, LSE: xt.constexpr):
    """:func:`attention_kernel` untransposed (queries x keys), for targets without 2D block
    messages (ARC), where the transposed form's ``order=(0, 1)`` tiles would be gathers:
    S = Q K^T (K^T through an ``order=(0, 1)`` tile), row reductions across lanes, then
    P V with P operand A (on ARC re-laid out by lane shuffles: lowering/rewrites/mma_relayout.py)."""
    base = xt.program_id(1) * NP
    _attention_rows_body(q, k, v, o, lse, xt.program_id(1), base, N, qk_scale, CAUSAL, OUT, D, BM, BN, LSE)


@xd.jit
def attention_rows_nd_kernel(q, k, v, o, lse, N, H, G, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                             D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, LSE: xt.constexpr):
    """:func:`attention_rows_kernel` on [Z, H, N, D] arrays of any strides (unit stride in
    D), one head's slices ``q[z, h]``, ``k[z, h // G]`` ... per program_id(1) = z * H + h."""
    head = xt.program_id(1)
    z = head // H
    h = head - z * H
    _attention_rows_body(q[z, h], k[z, h // G], v[z, h // G], o[z, h], lse[z], h, 0, N, qk_scale, CAUSAL, OUT, D,
                         BM, BN, LSE)


@xd.jit
def attention_rows_split_nd_kernel(q, k, v, o, lse, N, H, G, qk_scale, with_lse, CAUSAL: xt.constexpr,
                                   OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                                   LSE: xt.constexpr, SCALED: xt.constexpr):
    """:func:`attention_rows_nd_kernel` with the key blocks that need no mask in a loop of
    their own (:func:`_attention_rows_split_body`): the form of ``configs.attention_split``
    (sm90, whose two key loops are wgmma: codegen/nvptx/wgmma_attention.py)."""
    head = xt.program_id(1)
    z = head // H
    h = head - z * H
    _attention_rows_split_body(q[z, h], k[z, h // G], v[z, h // G], o[z, h], lse[z], h, N, qk_scale, CAUSAL, OUT, D,
                               BM, BN, LSE, SCALED)


@xd.jit
def attention_rows_split_varlen_kernel(q, k, v, o, lse, cu_seqlens, H, G, qk_scale, with_lse, CAUSAL: xt.constexpr,
                                       OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                                       LSE: xt.constexpr, SCALED: xt.constexpr):
    """:func:`attention_rows_split_nd_kernel` over packed variable-length sequences (the
    varlen form of the split targets, sm90): q, k, v, o are [H(_kv), total, D] views of the
    packed [total, H(_kv), D] arrays, sequence b the rows [cu_seqlens[b], cu_seqlens[b +
    1]); program_id(1) = b * H + h, program_id(0) the query block (programs past their
    sequence's end do nothing).  Keys past the sequence's end are masked like keys past N;
    the stores keep only the sequence's rows (a row edge mask: the block store with fewer
    rows), so a partial block never writes into the next sequence; ``lse`` is [total, H]
    (LSE: each query's column of its head, a row edge store as o's)."""
    h, start, N = _program_sequence(cu_seqlens, H)
    if xt.program_id(0) * BM < N:
        _attention_rows_split_body(q[h], k[h // G], v[h // G], o[h], lse, h, N, qk_scale, CAUSAL, OUT, D, BM, BN,
                                   LSE, SCALED, start, True)


@xd.jit
def _rows_update(s, m, s_sum, acc, tv, qk_scale, OUT: xt.constexpr, SCALED: xt.constexpr):
    """One key block of the untransposed online softmax: ``s`` the (masked) scores [BM, BN],
    scaled when SCALED (else unscaled, qk_scale > 0: the scale folds into the exp2's fma),
    m / s_sum the running [BM, 1] maximum and sum of the scaled scores, acc = O [BM, D]."""
    if SCALED:
        m_new = xt.maximum(m, xt.max(s, axis=1))
        p = xt.exp2(s - m_new)
    else:
        m_new = xt.maximum(m, xt.max(s, axis=1) * qk_scale)
        p = xt.exp2(xt.fma(s, qk_scale, -m_new))
    alpha = xt.exp2(m - m_new)
    s_sum = s_sum * alpha + xt.sum(p, axis=1)
    acc = xt.tile_mma(xt.astype(p, OUT), xt.load_tile(tv), acc * alpha)
    return m_new, s_sum, acc


@xd.jit
def _rows_scores(qv, tk, qk_scale, BM: xt.constexpr, BN: xt.constexpr, SCALED: xt.constexpr):
    """S = Q K^T of the keys under ``tk`` (times ``qk_scale`` when SCALED)."""
    s = xt.tile_mma(qv, xt.load_tile(tk), xt.zeros([BM, BN], xt.float32))
    if SCALED:
        s = s * qk_scale
    return s


@xd.jit
def _attention_rows_split_body(q, k, v, o, lse, lse_row, N, qk_scale, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                               D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, LSE: xt.constexpr,
                               SCALED: xt.constexpr, base=0, BOUNDED: xt.constexpr = False):
    """:func:`_attention_rows_body` with the key blocks in two loops: first those whose
    keys are all below N and (causal) at most the block's first query, with no mask;
    then the rest up to ``end`` (the causal diagonal, keys past N), masked.  SCALED =
    False (qk_scale > 0 only) leaves the scores unscaled until the exp2's fma.  BOUNDED
    (varlen): the head's rows [base, base + N) of q, k, v, o; the stores keep the rows
    below N only (what follows is the next sequence's).  Causal programs of fixed-length
    sequences take the query blocks last first (program 0 the last block, the most keys),
    so the GPU starts the longest programs of a head first and the grid's tail holds
    short ones (the maximum with 0 changes nothing but tells the compiler the block is
    not negative: the causal masked loop then folds to its one trip)."""
    qblk = xt.program_id(0) * BM
    if CAUSAL and not BOUNDED:
        qblk = xt.maximum(xt.num_programs(0) - 1 - xt.program_id(0), 0) * BM
    if BOUNDED:
        qv = xt.load_tile(xt.init_tile(q, [base + qblk, 0], [BM, D]))
        tk = xt.init_tile(k, [0, base], [D, BN], order=(0, 1))      # K^T: [D, keys]
        tv = xt.init_tile(v, [base, 0], [BN, D])
    else:
        qv = xt.load_tile(xt.init_tile(q, [qblk, 0], [BM, D]))
        tk = xt.init_tile(k, [0, 0], [D, BN], order=(0, 1))      # K^T: [D, keys]
        tv = xt.init_tile(v, [0, 0], [BN, D])
    m = xt.full([BM, 1], NEG_BIG, xt.float32)
    s_sum = xt.zeros([BM, 1], xt.float32)
    acc = xt.zeros([BM, D], xt.float32)
    end = N
    unmasked = N // BN * BN
    if CAUSAL:
        end = qblk + BM
        unmasked = (qblk + 1) // BN * BN   # blocks whose last key is at most the first query (< N)
    for start in range(0, unmasked, BN):
        s = _rows_scores(qv, tk, qk_scale, BM, BN, SCALED)
        m, s_sum, acc = _rows_update(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
        tk = xt.update_tile_offset(tk, 0, BN)
        tv = xt.update_tile_offset(tv, BN, 0)
    for start in range(unmasked, end, BN):
        s = _rows_scores(qv, tk, qk_scale, BM, BN, SCALED)
        s = xt.where(xt.arange(0, BN) < N - start, s, float("-inf"))
        if CAUSAL:   # key start + j is after query qblk + i when j - i > qblk - start
            s = xt.where(xt.arange(0, BN) - xt.transpose(xt.arange(0, BM)) <= qblk - start, s, float("-inf"))
        m, s_sum, acc = _rows_update(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
        tk = xt.update_tile_offset(tk, 0, BN)
        tv = xt.update_tile_offset(tv, BN, 0)
    if BOUNDED:
        kept = xt.transpose(xt.arange(0, BM)) + qblk < N
        xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o, [base + qblk, 0], [BM, D]), mask=kept)
        if LSE:     # lse is [total, H] here: the [BM, 1] column of the rows kept, a row edge too
            xt.store_tile((m + xt.log2(s_sum)) * LN2, xt.init_tile(lse, [base + qblk, lse_row], [BM, 1]), mask=kept)
    else:
        xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o, [qblk, 0], [BM, D]))
        if LSE:
            xt.store_tile(xt.transpose((m + xt.log2(s_sum)) * LN2), xt.init_tile(lse, [lse_row, qblk], [1, BM]))


@xd.jit
def _attention_rows_body(q, k, v, o, lse, lse_row, base, N, qk_scale, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                         D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, LSE: xt.constexpr):
    """The untransposed flash attention of one head: rows [base, base + N) of q, k, v, o."""
    qblk = xt.program_id(0) * BM
    qv = xt.load_tile(xt.init_tile(q, [base + qblk, 0], [BM, D]))
    m = xt.full([BM, 1], NEG_BIG, xt.float32)
    s_sum = xt.zeros([BM, 1], xt.float32)
    acc = xt.zeros([BM, D], xt.float32)
    tk = xt.init_tile(k, [0, base], [D, BN], order=(0, 1))      # K^T: [D, keys]
    tv = xt.init_tile(v, [base, 0], [BN, D])
    end = N
    if CAUSAL:
        end = qblk + BM
    # offsets[i, j] = j - i: key start + j is after query qblk + i when j - i > qblk - start
    offsets = xt.arange(0, BN) - xt.transpose(xt.arange(0, BM))
    for start in range(0, end, BN):
        s = xt.tile_mma(qv, xt.load_tile(tk), xt.zeros([BM, BN], xt.float32)) * qk_scale
        keys = xt.arange(0, BN) + start
        s = xt.where(keys < N, s, float("-inf"))
        if CAUSAL:
            s = xt.where(offsets <= qblk - start, s, float("-inf"))
        m_new = xt.maximum(m, xt.max(s, axis=1))
        p = xt.exp2(s - m_new)
        alpha = xt.exp2(m - m_new)
        s_sum = s_sum * alpha + xt.sum(p, axis=1)
        acc = xt.tile_mma(xt.astype(p, OUT), xt.load_tile(tv), acc * alpha)
        m = m_new
        tk = xt.update_tile_offset(tk, 0, BN)
        tv = xt.update_tile_offset(tv, BN, 0)
    xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o, [base + qblk, 0], [BM, D]))
    if LSE:   # a constexpr here: the transpose to the [1, BM] row spills 64 bytes on ARC
        xt.store_tile(xt.transpose((m + xt.log2(s_sum)) * LN2), xt.init_tile(lse, [lse_row, qblk], [1, BM]))


def attention(q, k, v, *, causal: bool = False, scale: float | None = None, cu_seqlens=None,
              max_seqlen: int | None = None, return_lse: bool = False, out=None, target: str | None = None):
    """softmax(q @ k^T * scale [+ causal mask]) @ v for [Z, H, N, D] q, k, v of f16 or
    bf16 (or [H, N, D], one batch), D = 32, 64 or 128 (scale defaults to 1 / sqrt(D)); f32
    statistics and accumulation.  k and v may have fewer heads H_kv dividing H
    (grouped-query attention: query head h attends with key/value head h // (H / H_kv)).
    The arrays may have any strides with unit stride in D
    (e.g. torch's ``x.transpose(1, 2)`` of a [Z, N, H, D] tensor): the kernel tiles each
    head's [N, D] slice in place, without host reshapes or padding.  P^T reaches the
    V^T P^T product as operand B stacked from the K Q^T result blocks
    (lowering/rewrites/mma_relayout.py).  ``return_lse=True`` returns ``(o, lse)`` with
    lse the f32 [Z, H, N] natural-log log-sum-exp of each query's scaled scores
    (``logsumexp(q k^T * scale)`` over the keys it sees), what
    :func:`~xetile_dsl.ops.attention_backward` takes.

    Variable-length batches (flash-attn's packed layout): with ``cu_seqlens`` (int32
    [batch + 1], 0 then the running total of the sequence lengths), q is [total, H, D] and
    k, v [total, H_kv, D], sequence b the rows [cu_seqlens[b], cu_seqlens[b + 1]); each
    sequence attends only within itself (causal: per sequence), one program per
    (sequence, head, query block) reading its bounds from ``cu_seqlens``.  ``max_seqlen``
    (the longest sequence) sizes the grid; None reads it from ``cu_seqlens``.  The result
    is [total, H, D], lse (``return_lse``) f32 [H, total].

    >>> import numpy as np
    >>> from xetile_dsl import ops
    >>> x = np.random.default_rng(0).standard_normal((1, 20, 2, 64)).astype(np.float16)
    >>> q = x.transpose(0, 2, 1, 3)                      # [Z, H, N, D], strided
    >>> ops.attention(q, q, q, target="interpret").shape
    (1, 2, 20, 64)
    >>> o, lse = ops.attention(q, q[:, :1], q[:, :1], return_lse=True, target="interpret")  # H_kv = 1
    >>> lse.shape, lse.dtype
    ((1, 2, 20), dtype('float32'))
    >>> packed = x[0, :13]                               # sequences of 5 and 8 tokens: [13, 2, 64]
    >>> cu = np.array([0, 5, 13], np.int32)
    >>> ops.attention(packed, packed, packed, causal=True, cu_seqlens=cu, target="interpret").shape
    (13, 2, 64)
    """
    if cu_seqlens is not None:
        result, lse, _ = _launch_varlen(q, k, v, causal, scale, cu_seqlens, max_seqlen, return_lse, out, target)
        return (result, lse) if return_lse else result
    if max_seqlen is not None:
        raise UsageError("attention: max_seqlen goes with cu_seqlens (packed variable-length sequences)")
    result, lse, _ = _launch(q, k, v, causal, scale, return_lse, out, target)
    return (result, lse) if return_lse else result


def attention_launch(q, k, v, *, causal: bool = False, scale: float | None = None, out=None,
                     target: str | None = None):
    """:func:`attention` returning ``(result, event)`` (the launch's event for device
    arrays, None for numpy), for benchmarks."""
    result, _, event = _launch(q, k, v, causal, scale, False, out, target)
    return result, event


def _launch(q, k, v, causal, scale, return_lse, out, target):
    """(result, lse or None, event) of :func:`attention`."""
    q, k, v = (_operand(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    batched = q.ndim == 3 and k.ndim == 3 and v.ndim == 3    # [H, N, D]: one batch
    if batched:
        q, k, v = (x[None] for x in (q, k, v))                 # views with a leading 1
    Z, H, N, D = _check(q, k, v)
    dtype = operands.dtype_of(q)
    target = configs.resolve_target(target, q)
    BM, BN = configs.attention_tiles(target, D)
    shape = (H, N, D) if batched else (Z, H, N, D)
    result = operands.check_out(out, shape, dtype) if out is not None else operands.empty_like_input(q, shape, dtype)
    lse = operands.empty_like_input(q, (Z, H, N), np.float32) if return_lse else _no_lse(q)
    qk_scale = (1.0 / math.sqrt(D) if scale is None else float(scale)) * math.log2(math.e)
    kernel, options = _kernel_and_options(target, qk_scale, return_lse)
    vnni = configs.attention_vnni_tiles(target, D)
    if vnni is not None:
        kernel, (BM, BN) = attention_vnni_nd_kernel, vnni
    event = kernel.on(target)[(-(-N // BM), Z * H)](
        q, k, v, result[None] if batched else result, lse, N, H, H // int(k.shape[1]), qk_scale, int(return_lse),
        CAUSAL=bool(causal), OUT=XT_DTYPES[_name(dtype)], D=D, BM=BM, BN=BN, **options)
    if not return_lse:
        return result, None, event
    return result, (lse[0] if batched else lse), event


def _launch_varlen(q, k, v, causal, scale, cu_seqlens, max_seqlen, return_lse, out, target):
    """(result, lse or None, event) of :func:`attention` with ``cu_seqlens``."""
    q, k, v = (_operand(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    T, H, D = _check_varlen(q, k, v)
    cu = _seqlens(cu_seqlens, T)
    lengths = np.diff(cu)
    longest = int(lengths.max()) if max_seqlen is None else int(max_seqlen)
    if longest < int(lengths.max()):
        raise UsageError(f"attention: max_seqlen = {max_seqlen} is less than the longest sequence, "
                         f"{int(lengths.max())} tokens")
    dtype = operands.dtype_of(q)
    target = configs.resolve_target(target, q)
    split = configs.attention_form(target) != "transposed" and configs.attention_split(target)
    if configs.attention_form(target) != "transposed" and not split:
        raise UsageError(f"attention: cu_seqlens runs on the transposed form's targets (2D block messages) and "
                         f"the split rows form's (sm90), not {target}; pad the sequences to [Z, H, N, D] there")
    BM, BN = configs.attention_tiles(target, D)
    result = operands.check_out(out, (T, H, D), dtype) if out is not None else \
        operands.empty_like_input(q, (T, H, D), dtype)
    qk_scale = (1.0 / math.sqrt(D) if scale is None else float(scale)) * math.log2(math.e)
    batch = len(cu) - 1
    kernel, options = attention_varlen_kernel, {}
    lse = operands.empty_like_input(q, (H, T) if return_lse else (1, 1), np.float32)
    if split:       # the rows split kernel, per-program bounds read from cu_seqlens; lse [T, H] there
        kernel, options = attention_rows_split_varlen_kernel, {"LSE": bool(return_lse)}
        lse = operands.empty_like_input(q, (T, H) if return_lse else (1, 1), np.float32)
    event = kernel.on(target)[(max(1, -(-longest // BM)), batch * H)](
        *(_heads_first(x) for x in (q, k, v, result)), lse, operands.host_like_input(cu, q), H,
        H // int(k.shape[1]), qk_scale, int(return_lse), CAUSAL=bool(causal), OUT=XT_DTYPES[_name(dtype)], D=D,
        BM=BM, BN=BN, SCALED=not qk_scale > 0, **options)
    if split and return_lse:
        lse = lse.T.contiguous() if operands.is_torch(lse) else np.ascontiguousarray(lse.T)   # [H, total]
    return result, (lse if return_lse else None), event


def _check_varlen(q, k, v) -> tuple[int, int, int]:
    """(total, H, D) of packed [total, H, D] q and [total, H_kv, D] k, v, checked."""
    if q.ndim != 3 or k.ndim != 3 or tuple(k.shape) != tuple(v.shape) or \
            (q.shape[0], q.shape[2]) != (k.shape[0], k.shape[2]) or k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        raise UsageError(f"attention: with cu_seqlens, q must be [total, H, D] and k, v of one shape "
                         f"[total, H_kv, D] with H_kv dividing H, got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    Z, H, T, D = _check(*(_heads_first(x)[None] for x in (q, k, v)))
    return T, H, D


def _heads_first(x):
    """The [H, total, D] view of a packed [total, H, D] array."""
    return x.permute(1, 0, 2) if operands.is_torch(x) else x.transpose(1, 0, 2)


def _seqlens(cu_seqlens, total: int) -> np.ndarray:
    """``cu_seqlens`` on the host as int32, checked: [batch + 1], 0 first, non-decreasing, ``total`` last."""
    cu = np.asarray(cu_seqlens.cpu() if operands.is_torch(cu_seqlens) else
                    (cu_seqlens.asnumpy() if hasattr(cu_seqlens, "asnumpy") else cu_seqlens))
    if cu.ndim != 1 or len(cu) < 2 or cu.dtype.kind not in "iu" or int(cu[0]) != 0 or \
            int(cu[-1]) != total or (np.diff(cu) < 0).any():
        raise UsageError(f"attention: cu_seqlens must be int32 [batch + 1]: 0, then the running total of the "
                         f"sequence lengths, ending at q's {total} tokens; got {cu!r}")
    return cu.astype(np.int32)


def attention_result(q, k, v, cu_seqlens=None) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of what :func:`attention` returns, checked as it checks them (same
    UsageErrors), without running: for the torch fake implementation (``ops/torch_ops.py``)."""
    if cu_seqlens is not None:                            # packed [total, H, D]
        return _check_varlen(q, k, v), operands.dtype_of(q)
    if q.ndim == 3 and k.ndim == 3 and v.ndim == 3:      # [H, N, D]: one batch
        return _check(q[None], k[None], v[None])[1:], operands.dtype_of(q)
    return _check(q, k, v), operands.dtype_of(q)


def _kernel_and_options(target: str, qk_scale: float, return_lse: bool = False):
    """The kernel form ``configs.attention_form`` names for ``target`` and its options: a
    positive scale is applied in the exp2's fma (SCALED = False; a zero or negative one
    would turn the masks' -inf into NaN or +inf there); the untransposed form takes
    ``return_lse`` as the constexpr LSE (the transposed one as its runtime with_lse);
    where ``configs.attention_split`` says so its split kernel, with the same SCALED."""
    if configs.attention_form(target) == "transposed":
        return attention_nd_kernel, {"SCALED": not qk_scale > 0}
    if configs.attention_split(target):
        return attention_rows_split_nd_kernel, {"LSE": bool(return_lse), "SCALED": not qk_scale > 0}
    return attention_rows_nd_kernel, {"LSE": bool(return_lse)}


#: the lse argument of launches without return_lse, one a torch device: a [1, 1, 1] f32
#: array that no kernel reads or writes then (LSE = False, with_lse = 0), made once
_NO_LSE: dict = {}


def _no_lse(q):
    """The [1, 1, 1] f32 placeholder for lse: for torch tensors one a device, kept (an
    allocation less a call), else a new array like ``q``'s."""
    if not operands.is_torch(q):
        return operands.empty_like_input(q, (1, 1, 1), np.float32)
    found = _NO_LSE.get(q.device)
    if found is None:
        found = _NO_LSE[q.device] = operands.empty_like_input(q, (1, 1, 1), np.float32)
    return found


#: (op, shapes, dtypes) of q, k, v -> what :func:`_check` found for them (a pure function
#: of those: checked once a combination)
_CHECKED: dict = {}


def _check(q, k, v, op: str = "attention") -> tuple[int, int, int, int]:
    """(Z, H, N, D) of [Z, H, N, D] q and [Z, H_kv, N, D] k, v (H_kv dividing H), checked
    (once for each combination of shapes and dtypes)."""
    try:
        key = (op, tuple(q.shape), tuple(k.shape), tuple(v.shape), q.dtype, k.dtype, v.dtype)
        found = _CHECKED.get(key)
    except (TypeError, AttributeError):         # an unhashable dtype: check every call
        key = found = None
    if found is not None:
        return found
    found = _check_shapes(q, k, v, op)
    if key is not None:
        if len(_CHECKED) > 1024:
            _CHECKED.clear()
        _CHECKED[key] = found
    return found


def _check_shapes(q, k, v, op: str) -> tuple[int, int, int, int]:
    if q.ndim != 4 or k.ndim != 4 or tuple(k.shape) != tuple(v.shape) or \
            (q.shape[0], q.shape[2], q.shape[3]) != (k.shape[0], k.shape[2], k.shape[3]) or \
            k.shape[1] == 0 or q.shape[1] % k.shape[1]:
        raise UsageError(f"{op}: q must be [Z, H, N, D] and k, v of one shape [Z, H_kv, N, D] with H_kv dividing H "
                         f"(or all [H, N, D]), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    dtypes = {_name(operands.dtype_of(x)) for x in (q, k, v)}
    if len(dtypes) != 1 or not dtypes <= set(INPUTS):
        raise UsageError(f"{op}: q, k, v must all be float16 or all bfloat16, got {sorted(dtypes)}")
    Z, H, N, D = (int(s) for s in q.shape)
    if D not in HEAD_DIMS or N == 0:
        raise UsageError(f"{op}: head dim D = {D}, N = {N}; supported D: {HEAD_DIMS}, N >= 1")
    return Z, H, N, D


def _operand(x, name: str):
    """``x`` as the kernel takes it: a numpy array with unit stride in its last dimension
    as it is (the launcher copies it in, whatever its other strides), anything else as
    ``operands.as_array`` makes it."""
    if isinstance(x, np.ndarray) and x.ndim and x.strides[-1] == x.itemsize:
        return x
    return operands.as_array(x, name)


@functools.lru_cache(maxsize=None)
def _name(dtype) -> str:
    return "bfloat16" if dtype == operands.BF16 else np.dtype(dtype).name
