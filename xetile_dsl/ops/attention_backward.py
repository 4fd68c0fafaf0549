"""``ops.attention_backward``: the flash attention backward (FlashAttention-2's split),
dq, dk, dv of ``o = softmax(q k^T * scale) v`` from the forward's log-sum-exp.

With P = exp(S * scale - lse) recomputed from the saved lse (no softmax statistics are
rebuilt), dP = dO V^T, delta = rowsum(dO * O) and dS = P * (dP - delta):
dV = P^T dO, dK = scale * dS^T Q, dQ = scale * dS K.  Two kernels, both transposed
(keys x queries, as the forward: per-query values are [1, BM] rows and every product's
operands are tiles or ``tile_mma`` results, lowering/rewrites/mma_relayout.py):

* :func:`attention_bwd_dq_kernel` owns BM queries of one head and walks the key blocks:
  it first stores that block's delta (O^T and dO^T are [D, BM] tiles: the row sum is a
  sum down each lane's column), then accumulates dQ^T = K^T dS^T.
* :func:`attention_bwd_dkdv_kernel` owns BN keys of one key/value head and walks, for each
  query head of its group (grouped-query attention: query head h uses key/value head
  h // G), the query blocks, accumulating dV = P^T dO and dK = dS^T Q in registers.

On the rows form's targets (ARC, ``configs.attention_form``: no 2D block messages, so
the transposed form's K^T operand A would be gathers) :func:`attention_bwd_dq_rows_kernel`
runs dq untransposed (queries x keys) and :func:`attention_bwd_dkdv_rows_kernel` runs
twice, once per accumulator (dV, then dK), with the tiles of ``configs.attention_backward_tiles``
and ``configs.attention_backward_dq_queries`` (docs/decisions/039-arc-attention-backward.md).

Each output element is written by one program (no atomics), so dq, dk, dv (the group's
sum for dk, dv included) do not depend on scheduling.  The dq kernel runs first: the
dk/dv kernel reads its delta.  lse is the natural-log one ``ops.attention(...,
return_lse=True)`` gives; the kernels use it in base 2 (times log2(e)).

Rows past N (the tiles address each head's [N, D] slice in place) read as zeros: a padded
query contributes nothing to dK, dV (its dO and q rows are zero, its lse and delta
zero), a padded key's dK, dV rows are not stored, and the dq kernel masks keys past N
(there a zero key row would give p = exp2(-lse), unbounded)."""
from __future__ import annotations

import math

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .attention import _check, _name, _operand
from .matmul import XT_DTYPES

LOG2E = math.log2(math.e)


@xd.jit
def _probabilities(k, qt, lse2, qk_scale, BN: xt.constexpr, BM: xt.constexpr):
    """P^T = exp2(K Q^T * qk_scale - lse2) [keys, queries] (lse2: the [1, BM] base-2 lse)."""
    s = xt.tile_mma(k, qt, xt.zeros([BN, BM], xt.float32))
    return xt.fma(s, qk_scale, -lse2)


@xd.jit
def _keep(x, key0, query0, N, BN: xt.constexpr, BM: xt.constexpr, CAUSAL: xt.constexpr):
    """``x`` [keys key0 + j, queries query0 + i] with -inf where the key is past N or,
    causal, after its query (j - i > query0 - key0)."""
    keys = xt.transpose(xt.arange(0, BN))
    x = xt.where(keys < N - key0, x, float("-inf"))
    if CAUSAL:
        x = xt.where(keys - xt.arange(0, BM) <= query0 - key0, x, float("-inf"))
    return x


@xd.jit
def _dq_step(tk, tv, tkt, tqt, tdot, lse2, dlt, acc, key0, query0, N, qk_scale, OUT: xt.constexpr,
             BN: xt.constexpr, BM: xt.constexpr, MASKED: xt.constexpr, CAUSAL: xt.constexpr):
    """dQ^T += K^T dS^T for the keys under ``tk`` (rows of K), ``tv`` (V) and ``tkt`` (K^T)."""
    x = _probabilities(xt.load_tile(tk), xt.load_tile(tqt), lse2, qk_scale, BN, BM)
    if MASKED:
        x = _keep(x, key0, query0, N, BN, BM, CAUSAL)
    p = xt.exp2(x)
    dp = xt.tile_mma(xt.load_tile(tv), xt.load_tile(tdot), xt.zeros([BN, BM], xt.float32))     # dP^T = V dO^T
    ds = p * (dp - dlt)
    return xt.tile_mma(xt.load_tile(tkt), xt.astype(ds, OUT), acc)


@xd.jit
def attention_bwd_dq_kernel(q, k, v, o, do, lse, delta, dq, N, H, G, qk_scale, sm_scale, CAUSAL: xt.constexpr,
                            OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """delta and dq of the queries [program_id(0) * BM, + BM) of head program_id(1) = z * H
    + h ([Z, H, N, D] q, o, do, dq; [Z, H / G, N, D] k, v; [Z, H, N] f32 lse, delta):
    delta = colsum(O^T * dO^T), then for each key block (BN keys) P^T, dP^T = V dO^T,
    dS^T = P^T * (dP^T - delta) and dQ^T += K^T dS^T; keys before the block's first query
    (causal) or before N // BN * BN run unmasked, the rest masked."""
    head = xt.program_id(1)
    z = head // H
    h = head - z * H
    qblk = xt.program_id(0) * BM
    tqt = xt.init_tile(q[z, h], [0, qblk], [D, BM], order=(0, 1))                 # Q^T [D, queries]
    tdot = xt.init_tile(do[z, h], [0, qblk], [D, BM], order=(0, 1))               # dO^T
    ot = xt.load_tile(xt.init_tile(o[z, h], [0, qblk], [D, BM], order=(0, 1)))
    dlt = xt.sum(xt.astype(ot, xt.float32) * xt.astype(xt.load_tile(tdot), xt.float32), axis=0)  # [1, queries]
    xt.store_tile(dlt, xt.init_tile(delta[z], [h, qblk], [1, BM]))
    lse2 = xt.load_tile(xt.init_tile(lse[z], [h, qblk], [1, BM])) * LOG2E
    tk = xt.init_tile(k[z, h // G], [0, 0], [BN, D])
    tv = xt.init_tile(v[z, h // G], [0, 0], [BN, D])
    tkt = xt.init_tile(k[z, h // G], [0, 0], [D, BN], order=(0, 1))               # K^T [D, keys]
    acc = xt.zeros([D, BM], xt.float32)                                          # dQ^T
    end = N
    unmasked = N // BN * BN
    if CAUSAL:
        end = qblk + BM
        unmasked = (qblk + 1) // BN * BN   # blocks whose last key is at most the first query
    for key0 in range(0, unmasked, BN):
        acc = _dq_step(tk, tv, tkt, tqt, tdot, lse2, dlt, acc, key0, qblk, N, qk_scale, OUT, BN, BM, False, CAUSAL)
        tk = xt.update_tile_offset(tk, BN, 0)
        tv = xt.update_tile_offset(tv, BN, 0)
        tkt = xt.update_tile_offset(tkt, 0, BN)
    for key0 in range(unmasked, end, BN):
        acc = _dq_step(tk, tv, tkt, tqt, tdot, lse2, dlt, acc, key0, qblk, N, qk_scale, OUT, BN, BM, True, CAUSAL)
        tk = xt.update_tile_offset(tk, BN, 0)
        tv = xt.update_tile_offset(tv, BN, 0)
        tkt = xt.update_tile_offset(tkt, 0, BN)
    xt.store_tile(xt.astype(acc * sm_scale, OUT), xt.init_tile(dq[z, h], [0, qblk], [D, BM], order=(0, 1)))


@xd.jit
def _dkdv_step(kv, vv, tqt, tq, tdot, tdo, tl, td, dk, dv, key0, query0, N, qk_scale, OUT: xt.constexpr,
               BN: xt.constexpr, BM: xt.constexpr, MASKED: xt.constexpr):
    """dV += P^T dO and dK += dS^T Q for the queries under the tiles (Q^T, Q, dO^T, dO, and
    the [1, BM] lse and delta rows)."""
    x = _probabilities(kv, xt.load_tile(tqt), xt.load_tile(tl) * LOG2E, qk_scale, BN, BM)
    if MASKED:
        x = _keep(x, key0, query0, N, BN, BM, True)
    p = xt.exp2(x)                                                                 # P^T [keys, queries]
    dv = xt.tile_mma(xt.astype(p, OUT), xt.load_tile(tdo), dv)
    dp = xt.tile_mma(vv, xt.load_tile(tdot), xt.zeros([BN, BM], xt.float32))     # dP^T = V dO^T
    ds = p * (dp - xt.load_tile(td))
    dk = xt.tile_mma(xt.astype(ds, OUT), xt.load_tile(tq), dk)
    return dk, dv


@xd.jit
def attention_bwd_dkdv_kernel(q, k, v, do, lse, delta, dk_out, dv_out, N, HKV, qk_scale, sm_scale,
                              CAUSAL: xt.constexpr, OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr,
                              BN: xt.constexpr, G: xt.constexpr):
    """dk, dv of the keys [program_id(0) * BN, + BN) of key/value head program_id(1) =
    z * HKV + hk: for each of its G query heads hk * G + g and each query block (BM
    queries), P^T, dV += P^T dO, dP^T = V dO^T, dS^T = P^T * (dP^T - delta), dK += dS^T Q
    (causal: query blocks before the key block are skipped, those meeting it masked)."""
    head = xt.program_id(1)
    z = head // HKV
    hk = head - z * HKV
    key0 = xt.program_id(0) * BN
    kv = xt.load_tile(xt.init_tile(k[z, hk], [key0, 0], [BN, D]))
    vv = xt.load_tile(xt.init_tile(v[z, hk], [key0, 0], [BN, D]))
    dk = xt.zeros([BN, D], xt.float32)
    dv = xt.zeros([BN, D], xt.float32)
    start = 0
    first = 0                     # the first query block that needs no mask
    if CAUSAL:
        start = key0 // BM * BM
        first = (key0 + BN + BM - 1) // BM * BM
    for g in xt.static_range(G):   # (unrolled: a runtime loop around the query loops miscompiled)
        h = hk * G + g
        tqt = xt.init_tile(q[z, h], [0, start], [D, BM], order=(0, 1))
        tq = xt.init_tile(q[z, h], [start, 0], [BM, D])
        tdot = xt.init_tile(do[z, h], [0, start], [D, BM], order=(0, 1))
        tdo = xt.init_tile(do[z, h], [start, 0], [BM, D])
        tl = xt.init_tile(lse[z], [h, start], [1, BM])
        td = xt.init_tile(delta[z], [h, start], [1, BM])
        for query0 in range(start, first, BM):
            dk, dv = _dkdv_step(kv, vv, tqt, tq, tdot, tdo, tl, td, dk, dv, key0, query0, N, qk_scale, OUT, BN, BM,
                                True)
            tqt, tdot = xt.update_tile_offset(tqt, 0, BM), xt.update_tile_offset(tdot, 0, BM)
            tq, tdo = xt.update_tile_offset(tq, BM, 0), xt.update_tile_offset(tdo, BM, 0)
            tl, td = xt.update_tile_offset(tl, 0, BM), xt.update_tile_offset(td, 0, BM)
        for query0 in range(first, N, BM):
            dk, dv = _dkdv_step(kv, vv, tqt, tq, tdot, tdo, tl, td, dk, dv, key0, query0, N, qk_scale, OUT, BN, BM,
                                False)
            tqt, tdot = xt.update_tile_offset(tqt, 0, BM), xt.update_tile_offset(tdot, 0, BM)
            tq, tdo = xt.update_tile_offset(tq, BM, 0), xt.update_tile_offset(tdo, BM, 0)
            tl, td = xt.update_tile_offset(tl, 0, BM), xt.update_tile_offset(td, 0, BM)
    xt.store_tile(xt.astype(dk * sm_scale, OUT), xt.init_tile(dk_out[z, hk], [key0, 0], [BN, D]))
    xt.store_tile(xt.astype(dv, OUT), xt.init_tile(dv_out[z, hk], [key0, 0], [BN, D]))


@xd.jit
def _dq_rows_step(qv, dov, tkt, tvt, tk, lse2, dlt, acc, key0, query0, N, qk_scale, OUT: xt.constexpr,
                  BN: xt.constexpr, BM: xt.constexpr, CAUSAL: xt.constexpr):
    """dQ += dS K for the keys under ``tkt`` (K^T), ``tvt`` (V^T) and ``tk`` (rows of K),
    untransposed: S = Q K^T, P = exp2(S * qk_scale - lse2) with keys past N or (causal)
    after their query at -inf, dP = dO V^T, dS = P * (dP - delta)."""
    x = xt.fma(xt.tile_mma(qv, xt.load_tile(tkt), xt.zeros([BM, BN], xt.float32)), qk_scale, -lse2)
    keys = xt.arange(0, BN)
    x = xt.where(keys < N - key0, x, float("-inf"))
    if CAUSAL:
        x = xt.where(keys - xt.transpose(xt.arange(0, BM)) <= query0 - key0, x, float("-inf"))
    p = xt.exp2(x)
    dp = xt.tile_mma(dov, xt.load_tile(tvt), xt.zeros([BM, BN], xt.float32))
    ds = p * (dp - dlt)
    return xt.tile_mma(xt.astype(ds, OUT), xt.load_tile(tk), acc)


@xd.jit
def attention_bwd_dq_rows_kernel(q, k, v, o, do, lse, delta, dq, N, H, G, qk_scale, sm_scale,
                                 CAUSAL: xt.constexpr, OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr,
                                 BN: xt.constexpr):
    """:func:`attention_bwd_dq_kernel` untransposed (queries x keys), for targets without
    2D block messages (ARC, ``configs.attention_form`` "rows"), where the transposed
    form's K^T operand A would be gathers: Q, dO [BM, D] stay in registers as operand A,
    K^T and V^T are operand B through ``order=(0, 1)`` tiles (each lane reads a key's
    row), dS is operand A of dQ += dS K (re-laid out by lane shuffles,
    lowering/rewrites/mma_relayout.py).  delta = rowsum(O * dO) and lse are [BM, 1]
    columns, stored and read through 1-D tiles of the head's [N] row."""
    head = xt.program_id(1)
    z = head // H
    h = head - z * H
    qblk = xt.program_id(0) * BM
    qv = xt.load_tile(xt.init_tile(q[z, h], [qblk, 0], [BM, D]))
    dov = xt.load_tile(xt.init_tile(do[z, h], [qblk, 0], [BM, D]))
    # delta = colsum(O^T * dO^T) [1, queries] (O^T, dO^T: each lane reads a query's row)
    ot = xt.load_tile(xt.init_tile(o[z, h], [0, qblk], [D, BM], order=(0, 1)))
    dot = xt.load_tile(xt.init_tile(do[z, h], [0, qblk], [D, BM], order=(0, 1)))
    dlt_row = xt.sum(xt.astype(ot, xt.float32) * xt.astype(dot, xt.float32), axis=0)
    xt.store_tile(dlt_row, xt.init_tile(delta[z], [h, qblk], [1, BM]))
    dlt = xt.transpose(dlt_row)                                                  # [queries, 1]
    lse2 = xt.transpose(xt.load_tile(xt.init_tile(lse[z], [h, qblk], [1, BM]))) * LOG2E
    tkt = xt.init_tile(k[z, h // G], [0, 0], [D, BN], order=(0, 1))               # K^T [D, keys]
    tvt = xt.init_tile(v[z, h // G], [0, 0], [D, BN], order=(0, 1))               # V^T
    tk = xt.init_tile(k[z, h // G], [0, 0], [BN, D])                              # K [keys, D]
    acc = xt.zeros([BM, D], xt.float32)                                          # dQ
    end = N
    if CAUSAL:
        end = qblk + BM
    for key0 in range(0, end, BN):
        acc = _dq_rows_step(qv, dov, tkt, tvt, tk, lse2, dlt, acc, key0, qblk, N, qk_scale, OUT, BN, BM, CAUSAL)
        tkt = xt.update_tile_offset(tkt, 0, BN)
        tvt = xt.update_tile_offset(tvt, 0, BN)
        tk = xt.update_tile_offset(tk, BN, 0)
    xt.store_tile(xt.astype(acc * sm_scale, OUT), xt.init_tile(dq[z, h], [qblk, 0], [BM, D]))


@xd.jit
def _dkdv_rows_step(tk, tv, tqt, tq, tdot, tdo, tl, td, acc, key0, query0, N, qk_scale, OUT: xt.constexpr,
                    BN: xt.constexpr, BM: xt.constexpr, CAUSAL: xt.constexpr, DK: xt.constexpr):
    """dK += dS^T Q (DK) or dV += P^T dO for the queries under the tiles, every operand
    read at its product (K and V too)."""
    x = _probabilities(xt.load_tile(tk), xt.load_tile(tqt), xt.load_tile(tl) * LOG2E, qk_scale, BN, BM)
    if CAUSAL:
        x = _keep(x, key0, query0, N, BN, BM, True)
    p = xt.exp2(x)                                                                 # P^T [keys, queries]
    if DK:
        dp = xt.tile_mma(xt.load_tile(tv), xt.load_tile(tdot), xt.zeros([BN, BM], xt.float32))  # dP^T = V dO^T
        acc = xt.tile_mma(xt.astype(p * (dp - xt.load_tile(td)), OUT), xt.load_tile(tq), acc)
    else:
        acc = xt.tile_mma(xt.astype(p, OUT), xt.load_tile(tdo), acc)
    return acc


@xd.jit
def attention_bwd_dkdv_rows_kernel(q, k, v, do, lse, delta, dk_out, dv_out, N, HKV, qk_scale, sm_scale,
                                   CAUSAL: xt.constexpr, OUT: xt.constexpr, D: xt.constexpr, BM: xt.constexpr,
                                   BN: xt.constexpr, G: xt.constexpr, DK: xt.constexpr):
    """dk (DK) or dv of :func:`attention_bwd_dkdv_kernel`'s keys, for the rows form's
    targets (ARC): the same keys x queries products, one accumulator per kernel (on ARC's
    8 lanes a [BN, D] f32 tile takes a quarter of the registers, and dK and dV together
    with their step's operands spilled), every operand (K, V included) read in the step
    that uses it, and one query loop whose steps are all masked when CAUSAL (keys past N
    need no mask: their rows are not stored)."""
    head = xt.program_id(1)
    z = head // HKV
    hk = head - z * HKV
    key0 = xt.program_id(0) * BN
    tk = xt.init_tile(k[z, hk], [key0, 0], [BN, D])
    tv = xt.init_tile(v[z, hk], [key0, 0], [BN, D])
    acc = xt.zeros([BN, D], xt.float32)
    start = 0
    if CAUSAL:
        start = key0 // BM * BM
    for g in xt.static_range(G):
        h = hk * G + g
        tqt = xt.init_tile(q[z, h], [0, start], [D, BM], order=(0, 1))
        tq = xt.init_tile(q[z, h], [start, 0], [BM, D])
        tdot = xt.init_tile(do[z, h], [0, start], [D, BM], order=(0, 1))
        tdo = xt.init_tile(do[z, h], [start, 0], [BM, D])
        tl = xt.init_tile(lse[z], [h, start], [1, BM])
        td = xt.init_tile(delta[z], [h, start], [1, BM])
        for query0 in range(start, N, BM):
            acc = _dkdv_rows_step(tk, tv, tqt, tq, tdot, tdo, tl, td, acc, key0, query0, N, qk_scale, OUT, BN, BM,
                                  CAUSAL, DK)
            tqt, tdot = xt.update_tile_offset(tqt, 0, BM), xt.update_tile_offset(tdot, 0, BM)
            tq, tdo = xt.update_tile_offset(tq, BM, 0), xt.update_tile_offset(tdo, BM, 0)
            tl, td = xt.update_tile_offset(tl, 0, BM), xt.update_tile_offset(td, 0, BM)
    if DK:
        xt.store_tile(xt.astype(acc * sm_scale, OUT), xt.init_tile(dk_out[z, hk], [key0, 0], [BN, D]))
    else:
        xt.store_tile(xt.astype(acc, OUT), xt.init_tile(dv_out[z, hk], [key0, 0], [BN, D]))


def attention_backward(q, k, v, o, do, lse, *, causal: bool = False, scale: float | None = None,
                       target: str | None = None):
    """(dq, dk, dv) of ``o = ops.attention(q, k, v, causal=causal, scale=scale)`` for the
    output gradient ``do``: q, o, do [Z, H, N, D] and k, v [Z, H_kv, N, D] (H_kv dividing
    H; dk, dv sum over the query heads sharing a key/value head) of f16 or bf16, D = 32, 64
    or 128, lse the f32 [Z, H, N] natural-log log-sum-exp from ``return_lse=True`` (or
    all [H, N, D] and lse [H, N], one batch); f32 accumulation, results in the inputs'
    dtype.  Deterministic: every element of dq, dk, dv is computed by one program.
    Targets: pvc, bmg, lnl, ptl, arc, cpu-pvc, cpu-arc and the interpreter.

    >>> import numpy as np
    >>> from xetile_dsl import ops
    >>> rng = np.random.default_rng(0)
    >>> q, do = (rng.standard_normal((1, 2, 20, 64)).astype(np.float16) for _ in range(2))
    >>> k, v = (rng.standard_normal((1, 1, 20, 64)).astype(np.float16) for _ in range(2))
    >>> o, lse = ops.attention(q, k, v, causal=True, return_lse=True, target="interpret")
    >>> dq, dk, dv = ops.attention_backward(q, k, v, o, do, lse, causal=True, target="interpret")
    >>> dq.shape, dk.shape, dv.dtype
    ((1, 2, 20, 64), (1, 1, 20, 64), dtype('float16'))
    """
    q, k, v, o, do, lse = (_operand(x, name) for x, name in
                           ((q, "q"), (k, "k"), (v, "v"), (o, "o"), (do, "do"), (lse, "lse")))
    batched = q.ndim == 3
    if batched:
        q, k, v, o, do, lse = (x[None] for x in (q, k, v, o, do, lse))
    Z, H, N, D = _check(q, k, v, "attention_backward")
    dtype = operands.dtype_of(q)
    for x, name in ((o, "o"), (do, "do")):
        if tuple(x.shape) != tuple(q.shape) or operands.dtype_of(x) != dtype:
            raise UsageError(f"attention_backward: {name} must have q's shape {tuple(q.shape)} and dtype "
                             f"{_name(dtype)}, got {tuple(x.shape)} {_name(operands.dtype_of(x))}")
    if tuple(lse.shape) != (Z, H, N) or operands.dtype_of(lse) != np.float32:
        raise UsageError(f"attention_backward: lse must be float32 {(Z, H, N)} (ops.attention(..., return_lse=True)), "
                         f"got {tuple(lse.shape)} {_name(operands.dtype_of(lse))}")
    target = configs.resolve_target(target, q)
    if not configs.gpu_of(target).ops_tiles().attention_backward:
        raise UsageError(f"attention_backward: target {target!r} has no attention backward kernels; it runs on pvc, bmg, "
                         f"arc, cpu-pvc, cpu-arc and the interpreter")
    dq, dk, dv = _launch(q, k, v, o, do, lse, causal, scale, target, target)
    return (dq[0], dk[0], dv[0]) if batched else (dq, dk, dv)


def _launch(q, k, v, o, do, lse, causal, scale, target: str, like: str):
    """(dq, dk, dv) of checked [Z, H, N, D] operands on ``target``, in the kernel form and
    tiles of the target ``like`` (itself, from :func:`attention_backward`; the tests run
    ARC's rows form in the interpreter with ``like="arc"``): the transposed form's dq and
    dk/dv kernels, or the rows form's dq kernel and its dk/dv kernel twice (dV, then dK)."""
    Z, H, N, D = (int(x) for x in q.shape)
    dtype = operands.dtype_of(q)
    BM, BN, BK = configs.attention_backward_tiles(like, D)
    HKV = int(k.shape[1])
    sm_scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    qk_scale = sm_scale * LOG2E
    out = XT_DTYPES[_name(dtype)]
    dq = operands.empty_like_input(q, (Z, H, N, D), dtype)
    dk = operands.empty_like_input(q, (Z, HKV, N, D), dtype)
    dv = operands.empty_like_input(q, (Z, HKV, N, D), dtype)
    delta = operands.empty_like_input(q, (Z, H, N), np.float32)
    consts = {"CAUSAL": bool(causal), "OUT": out, "D": D}
    if configs.attention_form(like) == "transposed":
        attention_bwd_dq_kernel.on(target)[(-(-N // BM), Z * H)](
            q, k, v, o, do, lse, delta, dq, N, H, H // HKV, qk_scale, sm_scale, BM=BM, BN=BK, **consts)
        attention_bwd_dkdv_kernel.on(target)[(-(-N // BN), Z * HKV)](
            q, k, v, do, lse, delta, dk, dv, N, HKV, qk_scale, sm_scale, BM=BM, BN=BN, G=H // HKV, **consts)
        return dq, dk, dv
    dq_bm = configs.attention_backward_dq_queries(like, D)
    attention_bwd_dq_rows_kernel.on(target)[(-(-N // dq_bm), Z * H)](
        q, k, v, o, do, lse, delta, dq, N, H, H // HKV, qk_scale, sm_scale, BM=dq_bm, BN=BK, **consts)
    for which in (False, True):
        attention_bwd_dkdv_rows_kernel.on(target)[(-(-N // BN), Z * HKV)](
            q, k, v, do, lse, delta, dk, dv, N, HKV, qk_scale, sm_scale, BM=BM, BN=BN, G=H // HKV, DK=which,
            **consts)
    return dq, dk, dv


def kernel_signatures(elem: str = "f16") -> dict:
    """The ``xd.compile`` signatures of the attention kernels as the ops launch them, on
    4-D ``elem`` arrays with f32 row statistics: ``"forward"`` (ops.attention's
    ``attention_nd_kernel``), ``"dq"`` and ``"dkdv"`` (this module's backward kernels);
    what static (ISA) builds of them take (benchmarks/attention_backward_isa.py, the ISA tests).

    Example::

        sig = kernel_signatures()["dq"]
        assert sig["dq"] == "f16[:,:,:,:]" and sig["lse"] == "f32[:,:,:]" and sig["N"] == "i32"
    """
    a4, l3 = f"{elem}[:,:,:,:]", "f32[:,:,:]"
    return {"forward": {"q": a4, "k": a4, "v": a4, "o": a4, "lse": l3, "N": "i32", "H": "i32", "G": "i32",
                        "qk_scale": "f32", "with_lse": "i32"},
            "dq": {"q": a4, "k": a4, "v": a4, "o": a4, "do": a4, "lse": l3, "delta": l3, "dq": a4, "N": "i32",
                   "H": "i32", "G": "i32", "qk_scale": "f32", "sm_scale": "f32"},
            "dkdv": {"q": a4, "k": a4, "v": a4, "do": a4, "lse": l3, "delta": l3, "dk_out": a4, "dv_out": a4,
                     "N": "i32", "HKV": "i32", "qk_scale": "f32", "sm_scale": "f32"}}
