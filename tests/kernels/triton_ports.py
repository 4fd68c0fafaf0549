"""Triton's tutorials ported the Triton way (1-D arrays, arange masks, ``other=``, scalar
reads, ``q[z, h]`` slices, ``xt.rand``, ``xt.atomic_cas`` locks, a persistent grid): the
kernels of tests/e2e/test_triton_ports.py."""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def add(x, y, out, n, BLOCK: xt.constexpr):
    off = xt.program_id(0) * BLOCK
    offs = off + xt.arange(0, BLOCK)
    m = offs < n
    a = xt.load_tile(xt.init_tile(x, [off], [BLOCK]), mask=m)
    b = xt.load_tile(xt.init_tile(y, [off], [BLOCK]), mask=m)
    xt.store_tile(a + b, xt.init_tile(out, [off], [BLOCK]), mask=m)


@xd.jit
def softmax(x, y, n_rows, n_cols, BN: xt.constexpr):
    for row in range(xt.program_id(0), n_rows, xt.num_programs(0)):
        cols = xt.arange(0, BN)
        v = xt.load_tile(xt.init_tile(x, [row, 0], [1, BN]), mask=cols < n_cols, other=float("-inf"))
        z = v - xt.max(v, axis=1)
        e = xt.exp(z)
        xt.store_tile(e / xt.sum(e, axis=1), xt.init_tile(y, [row, 0], [1, BN]), mask=cols < n_cols)


@xd.jit
def mm(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    offs_m = pid_m * BM + xt.arange(0, BM)
    offs_n = pid_n * BN + xt.arange(0, BN)
    offs_k = xt.arange(0, BK)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, xt.cdiv(K, BK)):
        va = xt.load_tile(ta, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BK), other=0.0)
        vb = xt.load_tile(tb, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = xt.tile_mma(va, vb, acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    acc = xt.where(acc >= 0, acc, 0.01 * acc)
    cm = offs_m[:, None] < M
    xt.store_tile(xt.astype(acc, xt.float16), xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]), mask=cm)


@xd.jit
def dropout(x, out, n, p, seed, BLOCK: xt.constexpr):
    off = xt.program_id(0) * BLOCK
    offs = off + xt.arange(0, BLOCK)
    m = offs < n
    v = xt.load_tile(xt.init_tile(x, [off], [BLOCK]), mask=m)
    r = xt.rand(seed, offs)
    keep = r > p
    xt.store_tile(xt.where(keep, v / (1 - p), 0.0), xt.init_tile(out, [off], [BLOCK]), mask=m)


@xd.jit
def ln_fwd(x, y, w, b, mean_out, rstd_out, N, eps, BN: xt.constexpr):
    row = xt.program_id(0)
    cols = xt.arange(0, BN)
    m = cols < N
    v = xt.load_tile(xt.init_tile(x, [row, 0], [1, BN]), mask=m, other=0.0)
    mean = xt.sum(v, axis=1) / N
    d = xt.where(m, v - mean, 0.0)
    var = xt.sum(d * d, axis=1) / N
    rstd = 1.0 / xt.sqrt(var + eps)
    xt.store_tile(xt.reshape(mean, [1]), xt.init_tile(mean_out, [row], [1]))
    xt.store_tile(xt.reshape(rstd, [1]), xt.init_tile(rstd_out, [row], [1]))
    wv = xt.load_tile(xt.init_tile(w, [0], [BN]), mask=cols < N)
    bv = xt.load_tile(xt.init_tile(b, [0], [BN]), mask=cols < N)
    xt.store_tile(d * rstd * wv + bv, xt.init_tile(y, [row, 0], [1, BN]), mask=m)


@xd.jit
def ln_bwd_dwdb(dy, x, w, dx, mean, rstd, dw, db, lock, N, G, BN: xt.constexpr):
    # partial dW/dB summed over rows, one lock per group of rows, Triton's scheme
    row = xt.program_id(0)
    cols = xt.arange(0, BN)
    m = cols < N
    xv = xt.load_tile(xt.init_tile(x, [row, 0], [1, BN]), mask=m)
    g = xt.load_tile(xt.init_tile(dy, [row, 0], [1, BN]), mask=m)
    mu = mean[row]
    rs = rstd[row]
    xhat = xt.where(m, (xv - mu) * rs, 0.0)
    wdy = xt.load_tile(xt.init_tile(w, [0], [BN]), mask=m) * g
    c1 = xt.sum(xhat * wdy, axis=1) / N
    c2 = xt.sum(wdy, axis=1) / N
    xt.store_tile((wdy - (xhat * c1 + c2)) * rs, xt.init_tile(dx, [row, 0], [1, BN]), mask=m)
    lid = row % G
    while xt.atomic_cas(lock, [lid, 0], 0, 1, sem="acquire") == 1:
        pass
    tw = xt.init_tile(dw, [lid, 0], [1, BN])
    tb = xt.init_tile(db, [lid, 0], [1, BN])
    count = lock[lid, 1]
    pw = g * xhat
    pb = g
    if count != 0:
        pw = pw + xt.load_tile(tw, mask=m)
        pb = pb + xt.load_tile(tb, mask=m)
    else:
        xt.atomic_xchg(lock, [lid, 1], 1)
    xt.store_tile(pw, tw, mask=m)
    xt.store_tile(pb, tb, mask=m)
    xt.atomic_xchg(lock, [lid, 0], 0, sem="release")


@xd.jit
def attn(q, k, v, o, H, N, scale, BM: xt.constexpr, BN: xt.constexpr, D: xt.constexpr):
    pid_m = xt.program_id(0)
    z, h = xt.program_id(1) // H, xt.program_id(1) % H
    offs_m = pid_m * BM + xt.arange(0, BM)
    qv = xt.load_tile(xt.init_tile(q[z, h], [pid_m * BM, 0], [BM, D]))
    m_i = xt.full([BM, 1], float("-inf"), xt.float32)
    l_i = xt.zeros([BM, 1], xt.float32)
    acc = xt.zeros([BM, D], xt.float32)
    for start_n in range(0, (pid_m + 1) * BM, BN):
        kt = xt.load_tile(xt.init_tile(k[z, h], [0, start_n], [D, BN], order=(0, 1)))
        qk = xt.tile_mma(qv, kt) * scale
        offs_n = start_n + xt.arange(0, BN)
        qk = xt.where((offs_m[:, None] >= offs_n[None, :]) & (offs_n[None, :] < N), qk, float("-inf"))
        m_new = xt.maximum(m_i, xt.max(qk, axis=1))
        p = xt.exp(qk - m_new)
        alpha = xt.exp(m_i - m_new)
        l_i = l_i * alpha + xt.sum(p, axis=1)
        vv = xt.load_tile(xt.init_tile(v[z, h], [start_n, 0], [BN, D]))
        acc = xt.tile_mma(xt.astype(p, xt.float16), vv, acc * alpha)
        m_i = m_new
    xt.store_tile(xt.astype(acc / l_i, xt.float16), xt.init_tile(o[z, h], [pid_m * BM, 0], [BM, D]))


@xd.jit
def pmm(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    tiles_n = xt.cdiv(N, BN)
    for tile in range(xt.program_id(0), xt.cdiv(M, BM) * tiles_n, xt.num_programs(0)):
        pm, pn = tile // tiles_n, tile % tiles_n
        ta = xt.init_tile(a, [pm * BM, 0], [BM, BK])
        tb = xt.init_tile(b, [0, pn * BN], [BK, BN])
        acc = xt.zeros([BM, BN], xt.float32)
        for kk in range(0, K, BK):
            acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
            ta = xt.update_tile_offset(ta, 0, BK)
            tb = xt.update_tile_offset(tb, BK, 0)
        xt.store_tile(acc, xt.init_tile(c, [pm * BM, pn * BN], [BM, BN]))


@xd.jit
def mm_both_masks(a, b, c, M, N, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    offs_m = xt.program_id(0) * BM + xt.arange(0, BM)
    offs_n = xt.arange(0, BN)
    acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])), xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@xd.jit
def mm8(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    offs_m = pid_m * BM + xt.arange(0, BM)
    offs_k = xt.arange(0, BK)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, xt.cdiv(K, BK)):
        xt.prefetch_tile(ta)
        va = xt.load_tile(ta, mask=offs_k[None, :] < K - k * BK)
        vb = xt.load_tile(tb, mask=offs_k[:, None] < K - k * BK)
        acc = xt.tile_mma(va, vb, acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    g = 0.5 * acc * (1.0 + xt.erf(acc * 0.7071067811865476))
    xt.store_tile(xt.astype(g, xt.float8_e5m2), xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]), mask=offs_m[:, None] < M)
