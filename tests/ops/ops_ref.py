"""f64 numpy references for xetile_dsl.ops with per-element error bounds derived from
the arithmetic the kernels do (f32 throughout, one rounding to the output dtype).

Notation: u = 2^-24 (f32 unit roundoff).  OpenCL's full-profile accuracy, which the CPU
device meets and our generated code relies on: exp <= 3 ulp, erf <= 16 ulp, rsqrt <= 2 ulp,
division <= 2.5 ulp; one ulp of a value v is at most 2u|v| (and 2^-149 near 0).  The
output rounding to f16 (bf16, f32) adds half an ulp: 2^-11 (2^-8, 2^-24) relative, plus
2^-25 absolute for f16 subnormals."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from f32_accumulate_ref import exact_products_matmul
from xetile_dsl.ops.attention import RESCALE_SLACK

U = 2.0 ** -24
BF16 = np.dtype(ml_dtypes.bfloat16)
#: dtype -> (relative half ulp, absolute floor) of rounding a result to it
OUT_ROUNDING = {np.dtype(np.float16): (2.0 ** -11, 2.0 ** -25), BF16: (2.0 ** -8, 2.0 ** -134),
                np.dtype(np.float32): (U, 2.0 ** -150)}
#: Lipschitz constants of the activations (sup |f'|): gelu'(x) peaks at 1.129 near x = 2.12,
#: silu'(x) at 1.0998 near x = 2.40
LIPSCHITZ = {None: 1.0, "relu": 1.0, "gelu": 1.13, "silu": 1.1}
_erf = np.vectorize(math.erf)


def activation_f64(x: np.ndarray, activation: str | None) -> np.ndarray:
    if activation == "relu":
        return np.maximum(x, 0.0)
    if activation == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if activation == "silu":
        return x / (1.0 + np.exp(-x))
    return x


def matmul_ref(a, b, bias=None, activation=None, out_dtype=np.float32):
    """(reference in f64, per-element bound) for ``act(a @ b + bias)`` computed with an
    f32 accumulation, one f32 bias add, the activation evaluated in f32 and one rounding.

    The accumulation bound is f32_accumulate_ref's ``(K + 1) u (|a| @ |b|)``; the bias add
    rounds once (u |x|); the activation passes both through times its Lipschitz constant
    and adds its own evaluation error: gelu = 0.5 x (1 + erf(x / sqrt 2)) has erf's 16 ulp
    (<= 32u absolute, |erf| <= 1) times 0.5 |x| plus four roundings (<= 4u(|x| + |y|));
    silu = x / (1 + exp(-x)) has exp's 3 ulp and division's 2.5 ulp plus two roundings:
    both are within 20 u (|x| + |y|)."""
    x, bound = exact_products_matmul(a, b)
    if bias is not None:
        x = x + np.asarray(bias, np.float64)
        bound = bound + U * np.abs(x)
    y = activation_f64(x, activation)
    bound = LIPSCHITZ[activation] * bound
    if activation in ("gelu", "silu"):
        bound = bound + 20 * U * (np.abs(x) + np.abs(y))
    rel, floor = OUT_ROUNDING[np.dtype(out_dtype)]
    return y, bound * (1 + rel) + rel * np.abs(y) + floor


def softmax_ref(x, out_dtype, chunk: int):
    """(softmax in f64, bound) for the online softmax over chunks of ``chunk`` columns.

    e_i = exp(x_i - m): the subtraction rounds (u |x_i - m| <= u R, R the row's range,
    through exp a relative u R) and exp adds 3 ulp (6u): delta_e = u R + 6u.  The sum s of
    N positive terms in f32, in C = ceil(N / chunk) chunks, each chunk rescaled by one exp
    (6u + u R) and one multiply and add (2u): delta_s = delta_e + (N + C) u + C (8u + u R).
    y = e * (1 / s): two roundings of 2.5 ulp and 1 ulp; the second pass computes e_i again
    (delta_e).  Relative error of y: 2 delta_e + delta_s + 7u, then the output rounding."""
    x64 = np.asarray(x, np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    n = x64.shape[-1]
    c = -(-n // chunk)
    r = (x64.max(axis=-1, keepdims=True) - x64.min(axis=-1, keepdims=True))
    delta_e = U * r + 6 * U
    rel_f32 = 3 * delta_e + (n + c) * U + c * (8 * U + U * r) + 7 * U
    rel, floor = OUT_ROUNDING[np.dtype(out_dtype)]
    return y, (rel_f32 * (1 + rel) + rel) * y + floor


def norm_ref(x, w, b, eps, out_dtype, chunk: int, rms: bool):
    """(layer norm or RMS norm in f64, bound) for the kernel's two-pass f32 statistics.

    mean: N terms summed in C chunks, then divided: |dmean| <= (N + C + 1) u mean|x|.
    d_i = x_i - mean: |dd_i| <= |dmean| + u |d_i|.  var = sum(d_i^2) / N: products and N + C
    additions and the division, relative (N + C + 3) u on positive terms, plus the effect of
    dd: (2/N) sum |d_i| |dd_i| + max|dd|^2.  (For RMS norm mean = 0, d = x, dmean = 0.)
    rstd = rsqrt(var + eps): the add rounds (u), rsqrt is 2 ulp (4u), and a relative error
    r of var + eps becomes r / 2: rel_rstd = (dvar / (var + eps) + u) / 2 + 4u.
    z = d * rstd * w (+ b): |dz| <= |d rstd w| (rel_rstd + 3u) + |dd| rstd |w| + u |z|,
    then the output rounding."""
    x64 = np.asarray(x, np.float64)
    n = x64.shape[-1]
    c = -(-n // chunk)
    if rms:
        mean, dmean = 0.0, 0.0
    else:
        mean = x64.mean(axis=-1, keepdims=True)
        dmean = (n + c + 1) * U * np.abs(x64).mean(axis=-1, keepdims=True)
    d = x64 - mean
    dd = dmean + U * np.abs(d)
    var = (d * d).mean(axis=-1, keepdims=True)
    dvar = (n + c + 3) * U * var + 2 * (np.abs(d) * dd).mean(axis=-1, keepdims=True) + \
        (dd * dd).max(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    rel_rstd = (dvar / (var + eps) + U) / 2 + 4 * U
    w64 = np.asarray(w, np.float64)
    z = d * rstd * w64 + (0.0 if rms or b is None else np.asarray(b, np.float64))
    dz = np.abs(d * rstd * w64) * (rel_rstd + 3 * U) + dd * rstd * np.abs(w64) + U * np.abs(z)
    rel, floor = OUT_ROUNDING[np.dtype(out_dtype)]
    return z, dz * (1 + rel) + rel * np.abs(z) + floor


def assert_within(c, ref, bound, what: str = ""):
    """Every element of ``c`` within ``bound`` of ``ref`` (the worst one named otherwise)."""
    err = np.abs(np.asarray(c, np.float64) - ref)
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), (f"{what}: |c - ref| = {err[worst]:.3e} > bound {bound[worst]:.3e} at {worst} "
                                  f"(c = {np.asarray(c)[worst]}, ref = {ref[worst]})")


def attention_ref(q, k, v, causal: bool):
    """(softmax(q k^T / sqrt(D)) v in f64, bound) for the flash kernel: f32 scores, the
    online base-2 softmax in f32, P rounded to the input dtype for the second DPAS.

    Scores: D exact products summed in f32, then scaled twice (1/sqrt(D), log2 e):
    |ds| <= ((D + 1) u (|q| @ |k|^T) + 2u |s|) / sqrt(D) in natural-log units, which moves
    each p_j by that relatively, and the normalisation once more: 2 max|ds| per row.  The
    softmax itself adds softmax_ref's relative (3 delta_e + (N + C) u + C (8u + uR) + 7u)
    with C the key blocks (at most N), delta_e widened for the lazy rescale (below).  P
    to f16 (bf16) rounds each p_j by 2^-11 (2^-8) relatively plus 2^-25 absolutely (p up
    to 2^8 under the lazy rescale, over a sum at least 1); P V sums N products in f32
    ((N + 1) u relative) and the final division rounds (3u).  All of it multiplies sum_j p_j |v_j|; then the output
    rounding."""
    q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
    n, d = q64.shape[-2:]
    s = q64 @ np.swapaxes(k64, -1, -2) / math.sqrt(d)
    ds = ((d + 1) * U * (np.abs(q64) @ np.swapaxes(np.abs(k64), -1, -2)) / math.sqrt(d) + 2 * U * np.abs(s))
    if causal:
        keep = np.tril(np.ones((n, n), bool))
        s, ds = np.where(keep, s, -np.inf), np.where(keep, ds, 0.0)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    o = p @ v64
    finite = np.where(np.isfinite(s), s, np.nan)
    r = np.nanmax(finite, -1, keepdims=True) - np.nanmin(finite, -1, keepdims=True)
    # lazy rescaling: the running maximum trails the true one by up to RESCALE_SLACK (log2
    # units), so an exponent is at most r + slack ln 2, and one taken before a rescale is
    # shifted (the fma, the shift and their sum: three roundings)
    delta_e = 3 * U * (r + RESCALE_SLACK * math.log(2)) + 6 * U
    rel_softmax = 3 * delta_e + 2 * n * U + n * (8 * U + U * r) + 7 * U
    rel_p = 2 * ds.max(-1, keepdims=True) + rel_softmax
    rel_in, _ = OUT_ROUNDING[np.dtype(q.dtype)]
    weight = p @ np.abs(v64)
    bound = weight * (rel_p + rel_in + (n + 4) * U) + n * 2.0 ** -25 * np.abs(v64).max(-2, keepdims=True)
    rel_out, floor = OUT_ROUNDING[np.dtype(q.dtype)]
    return o, bound * (1 + rel_out) + rel_out * np.abs(o) + floor


def decode_attention_ref(q, k_cache, v_cache, block_table, seq_lens, splits: int = 1):
    """(paged decode attention in f64, bound) for ops.decode_attention: each sequence's
    keys and values gathered from its blocks (``block_table``, the first ``seq_lens[b]``
    positions), query head h against kv head h // (H / KVH).

    The bound is :func:`attention_ref`'s for one query over n keys without the lazy
    rescale (the running maximum is exact, p <= 1): the scores' f32 sum and two scalings,
    softmax_ref's relative error with C = (the blocks) + ``splits`` rescaled chunks (each
    block step and each split's combine rescale by one exp2 and one multiply-add), P
    rounded to the input dtype (2^-11 f16, 2^-8 bf16 relative, plus the dtype's absolute
    floor per key, 2^-25 for f16 subnormals; the element-wise path keeps P in f32, within
    this), the P V sum of n f32 products ((n + 4) u relative, the combine's S additions
    included), then the output rounding."""
    q64 = np.asarray(q, np.float64)
    B, H, D = q64.shape
    _, BS, KVH, _ = k_cache.shape
    group = H // KVH
    o, bound = np.zeros((B, H, D)), np.zeros((B, H, D))
    rel_in, floor_in = OUT_ROUNDING[np.dtype(q.dtype)]
    for b in range(B):
        n = int(seq_lens[b])
        blocks = np.asarray(block_table[b, :-(-n // BS)])
        keys = np.asarray(k_cache[blocks], np.float64).reshape(-1, KVH, D)[:n]
        values = np.asarray(v_cache[blocks], np.float64).reshape(-1, KVH, D)[:n]
        chunks = len(blocks) + splits
        for h in range(H):
            k64, v64, qh = keys[:, h // group], values[:, h // group], q64[b, h]
            s = k64 @ qh / math.sqrt(D)
            ds = (D + 1) * U * (np.abs(k64) @ np.abs(qh)) / math.sqrt(D) + 2 * U * np.abs(s)
            p = np.exp(s - s.max())
            p = p / p.sum()
            o[b, h] = p @ v64
            r = s.max() - s.min()
            delta_e = 3 * U * r + 6 * U
            rel_p = 2 * ds.max() + 3 * delta_e + 2 * n * U + chunks * (8 * U + U * r) + 7 * U
            weight = p @ np.abs(v64)
            bound[b, h] = weight * (rel_p + rel_in + (n + 4) * U) + n * floor_in * np.abs(v64).max(0)
    rel_out, floor = OUT_ROUNDING[np.dtype(q.dtype)]
    return o, bound * (1 + rel_out) + rel_out * np.abs(o) + floor
