"""``ops.decode_attention``: one query token per sequence against a paged KV cache
(flash-decoding: split-K over the context, then a combine).

One program owns one (sequence, kv head, split): the ``G = num_heads // num_kv_heads``
query heads that share the kv head form a [GR, D] Q tile (GR: G rounded up to a multiple
of the DPAS repeat count, at most ``OpTiles.decode_max_rows``, past which a group takes
several programs; padding rows are computed and never stored), so each K/V block is
read once per group (per GR heads of a larger one).  The program walks its split's
blocks of the sequence, reading each physical block id from ``block_table[b, j]`` (a
scalar read), and tiles the cache viewed as [num_blocks, num_kv_heads, block_size, D]
(a strided view, no copy) at ``[blk, kvh, key, 0]``, KS keys per step
(``OpTiles.decode_keys_per_step``; a larger block takes several steps).  Groups of at
least ``OpTiles.decode_mma_group`` heads multiply on DPAS (S = Q K^T, K^T through an
``order=(0, 1)`` tile: transposed 2D block reads on PVC; P V with P converted to the
input dtype, operand A re-laid out from the first product's result); smaller ones (MHA:
G = 1) compute element-wise (S = sum(q * K) across D, O = sum(p * V) down the keys),
reading K and V as plain [KS, D] tiles.  The online softmax is base 2 (scores times
scale * log2(e)); keys past the sequence's length are masked, and V's rows there read
as 0 (a stale cache may hold NaN).

With one split (short contexts, or enough programs to fill the device) the program
divides and stores the output; otherwise it stores its unnormalised f32 (o, m, l) to
scratch and :func:`decode_combine_kernel` merges the splits per program.

fp8 caches (e4m3fn, e5m2; KV8) are read as bytes and converted to q's dtype in registers
(exact) before the products; the rest is as for a cache of q's dtype."""
from __future__ import annotations

import math

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .matmul import XT_DTYPES
from .rows import NEG_BIG

HEAD_DIMS = (64, 128)
INPUTS = ("float16", "bfloat16", "float32")
#: cache dtypes besides q's: OCP fp8, converted to q's dtype in registers
FP8_CACHES = ("float8_e4m3fn", "float8_e5m2")
BLOCK_SIZES = (16, 32, 64)
#: the most splits one (sequence, kv head) is cut into
MAX_SPLITS = 64
#: scratch columns of the per-row (m, l) pair: 16 f32 = 64 bytes, a 2D block row
ML_COLS = 16


@xd.jit
def decode_split_kernel(q, k, v, block_table, seq_lens, o, o_part, ml_part, KVH, S, BPS, qk_scale,
                        G: xt.constexpr, GR: xt.constexpr, D: xt.constexpr, BS: xt.constexpr, KS: xt.constexpr,
                        OUT: xt.constexpr, MMA: xt.constexpr, FINAL: xt.constexpr, KV8: xt.constexpr):
    """Split program_id(1) of program_id(0) = (b * KVH + kvh) * C + c, C = cdiv(G, GR):
    query heads [kvh * G + c * GR, + GR) of sequence b (the group's heads from c * GR on;
    rows past the group are computed, never stored) over blocks [split * BPS, + BPS) of
    the sequence (clipped to its length), KS keys per step.  FINAL (one split) stores o,
    else the f32 partials (rows (program_id(0) * S + split) * GR of o_part and ml_part,
    m in column 0 and l in column 1, base-2 units)."""
    bhc = xt.program_id(0)
    split = xt.program_id(1)
    bh = bhc // xt.cdiv(G, GR)
    head = (bhc - bh * xt.cdiv(G, GR)) * GR                    # first head of this program in the group
    b = bh // KVH
    kvh = bh - b * KVH
    n = seq_lens[b]
    first = split * BPS
    last = min(first + BPS, (n + (BS - 1)) // BS)
    qv = xt.load_tile(xt.init_tile(q[b], [kvh * G + head, 0], [GR, D]))
    m = xt.full([GR, 1], NEG_BIG, xt.float32)
    s_sum = xt.zeros([GR, 1], xt.float32)
    acc = xt.zeros([GR, D], xt.float32)
    keys = xt.transpose(xt.arange(0, KS))                       # [KS, 1]
    for j in range(first, last):
        blk = block_table[b, j]
        for sub in range(0, BS, KS):          # a loop (unrolled, IGC hoisted the loads and spilled)
            left = n - (j * BS + sub)                            # keys of this step in the sequence
            if MMA:
                kt = xt.load_tile(xt.init_tile(k, [blk, kvh, 0, sub], [1, 1, D, KS], order=(0, 1)))   # K^T
                if KV8:
                    kt = xt.astype(kt, OUT)                              # fp8 -> f16/bf16: exact
                s = xt.tile_mma(qv, kt, xt.zeros([GR, KS], xt.float32)) * qk_scale
                s = xt.where(xt.arange(0, KS) < left, s, float("-inf"))
                m_new = xt.maximum(m, xt.max(s, axis=1))
                p = xt.exp2(s - m_new)
                alpha = xt.exp2(m - m_new)
                s_sum = s_sum * alpha + xt.sum(p, axis=1)
                vv = xt.load_tile(xt.init_tile(v, [blk, kvh, sub, 0], [1, 1, KS, D]), mask=keys < left)
                if KV8:
                    vv = xt.astype(vv, OUT)
                acc = xt.tile_mma(xt.astype(p, OUT), vv, acc * alpha)
            else:
                kk = xt.astype(xt.load_tile(xt.init_tile(k, [blk, kvh, sub, 0], [1, 1, KS, D])), xt.float32)
                s = xt.sum(kk * xt.astype(qv, xt.float32), axis=1) * qk_scale              # [KS, 1]
                s = xt.where(keys < left, s, float("-inf"))
                m_new = xt.maximum(m, xt.max(s, axis=0))
                p = xt.exp2(s - m_new)
                alpha = xt.exp2(m - m_new)
                s_sum = s_sum * alpha + xt.sum(p, axis=0)
                vv = xt.load_tile(xt.init_tile(v, [blk, kvh, sub, 0], [1, 1, KS, D]), mask=keys < left)
                acc = acc * alpha + xt.sum(p * xt.astype(vv, xt.float32), axis=0)
            m = m_new
    if FINAL:
        rows = xt.transpose(xt.arange(0, GR))
        xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o[b], [kvh * G + head, 0], [GR, D]),
                      mask=rows < G - head)
    else:
        row = (bhc * S + split) * GR
        xt.store_tile(acc, xt.init_tile(o_part, [row, 0], [GR, D]))
        xt.store_tile(m, xt.init_tile(ml_part, [row, 0], [GR, 1]))
        xt.store_tile(s_sum, xt.init_tile(ml_part, [row, 1], [GR, 1]))


@xd.jit
def decode_combine_kernel(o_part, ml_part, o, KVH, S, G: xt.constexpr, GR: xt.constexpr,
                          D: xt.constexpr, OUT: xt.constexpr):
    """o for the heads of program_id(0) (as in :func:`decode_split_kernel`) from its S
    splits' partials: O = sum_s 2^(m_s - M) o_s / sum_s 2^(m_s - M) l_s, M the running
    maximum (a split with no keys has m = NEG_BIG, l = 0, o = 0 and weighs nothing)."""
    bhc = xt.program_id(0)
    bh = bhc // xt.cdiv(G, GR)
    head = (bhc - bh * xt.cdiv(G, GR)) * GR
    b = bh // KVH
    kvh = bh - b * KVH
    m = xt.full([GR, 1], NEG_BIG, xt.float32)
    s_sum = xt.zeros([GR, 1], xt.float32)
    acc = xt.zeros([GR, D], xt.float32)
    for split in range(S):
        row = (bhc * S + split) * GR
        m_s = xt.load_tile(xt.init_tile(ml_part, [row, 0], [GR, 1]))
        l_s = xt.load_tile(xt.init_tile(ml_part, [row, 1], [GR, 1]))
        o_s = xt.load_tile(xt.init_tile(o_part, [row, 0], [GR, D]))
        m_new = xt.maximum(m, m_s)
        alpha = xt.exp2(m - m_new)
        beta = xt.exp2(m_s - m_new)
        s_sum = s_sum * alpha + l_s * beta
        acc = acc * alpha + o_s * beta
        m = m_new
    rows = xt.transpose(xt.arange(0, GR))
    xt.store_tile(xt.astype(acc / s_sum, OUT), xt.init_tile(o[b], [kvh * G + head, 0], [GR, D]), mask=rows < G - head)


def decode_attention(q, k_cache, v_cache, block_table, seq_lens, scale: float | None = None, out=None, *,
                     num_splits: int | None = None, target: str | None = None):
    """softmax(q k^T * scale) v for one query token per sequence over a paged KV cache.

    ``q``: [batch, num_heads, D]; ``k_cache``, ``v_cache``: [num_blocks, block_size,
    num_kv_heads, D] (block_size 16, 32 or 64; num_kv_heads divides num_heads, query
    head h reads kv head h // (num_heads // num_kv_heads): MHA, GQA, MQA);
    ``block_table``: [batch, max_blocks] int32, the physical blocks of each sequence in
    order; ``seq_lens``: [batch] int32, each in [1, max_blocks * block_size] (checked
    for numpy arrays; on device arrays a length of 0 gives a NaN row).  f16, bf16 or f32
    (one dtype; or fp8 caches, ml_dtypes' ``float8_e4m3fn`` / ``float8_e5m2``, converted
    to q's dtype in registers: for caches stored as k / k_scale, v / v_scale pass
    ``scale=k_scale / sqrt(D)`` and multiply the result by v_scale), D = 64 or 128; f32
    statistics and accumulation; the result is [batch, num_heads, D] in q's dtype (or
    ``out=``).  ``scale`` defaults to 1 / sqrt(D).  ``num_splits`` (default: chosen from the context and the device)
    cuts each sequence's blocks into that many ranges, combined by a second kernel.

    >>> import numpy as np
    >>> from xetile_dsl import ops
    >>> rng = np.random.default_rng(0)
    >>> q = rng.standard_normal((2, 8, 64)).astype(np.float16)          # 8 heads
    >>> k = rng.standard_normal((6, 16, 2, 64)).astype(np.float16)      # 2 kv heads
    >>> table = np.array([[4, 1, 0], [2, 5, 3]], np.int32)
    >>> ops.decode_attention(q, k, k, table, np.array([40, 7], np.int32), target="interpret").shape
    (2, 8, 64)
    """
    return decode_attention_launch(q, k_cache, v_cache, block_table, seq_lens, scale=scale, out=out,
                                   num_splits=num_splits, target=target)[0]


def decode_attention_launch(q, k_cache, v_cache, block_table, seq_lens, scale: float | None = None, out=None, *,
                            num_splits: int | None = None, target: str | None = None):
    """:func:`decode_attention` returning ``(result, event)`` (the last launch's event for
    device arrays, None for numpy), for benchmarks."""
    q, k_cache, v_cache = (_operand(x, name) for x, name in ((q, "q"), (k_cache, "k_cache"), (v_cache, "v_cache")))
    block_table, seq_lens = (operands.as_array(x, name) for x, name in ((block_table, "block_table"),
                                                                          (seq_lens, "seq_lens")))
    B, H, KVH, D, BS, max_blocks = _check(q, k_cache, v_cache, block_table, seq_lens)
    dtype = operands.dtype_of(q)
    target = configs.resolve_target(target, q)
    G = H // KVH
    tiles = configs.decode_tiles(target, D)
    mma = G >= tiles.mma_group and dtype != np.float32   # f32: element-wise (no tf32 DPAS on every target)
    GR = min(configs.decode_group_rows(target, _name(dtype), G), tiles.max_rows) if mma else 1
    KS = min(BS, tiles.keys_per_step)
    programs = B * KVH * -(-G // GR)
    splits = default_splits(target, programs, max_blocks, BS) if num_splits is None else \
        _checked_splits(num_splits, max_blocks)
    bps = -(-max_blocks // splits)
    splits = -(-max_blocks // bps)                   # no split left without blocks in every sequence
    result = operands.check_out(out, (B, H, D), dtype) if out is not None else \
        operands.empty_like_input(q, (B, H, D), dtype)
    qk_scale = (1.0 / math.sqrt(D) if scale is None else float(scale)) * math.log2(math.e)
    out_t = XT_DTYPES[_name(dtype)]
    # the caches as [num_blocks, num_kv_heads, block_size, D] views: k[blk, kvh] is one block's [BS, D]
    kt, vt = (x.transpose(1, 2) if operands.is_torch(x) else x.transpose(0, 2, 1, 3) for x in (k_cache, v_cache))
    rows = programs * splits * GR if splits > 1 else 1
    o_part = operands.empty_like_input(q, (rows, D), np.float32)
    ml_part = operands.empty_like_input(q, (rows, ML_COLS), np.float32)
    event = decode_split_kernel.on(target)[(programs, splits)](
        q, kt, vt, block_table, seq_lens, result, o_part, ml_part, KVH, splits, bps, qk_scale,
        G=G, GR=GR, D=D, BS=BS, KS=KS, OUT=out_t, MMA=mma, FINAL=splits == 1,
        KV8=_name(operands.dtype_of(k_cache)) in FP8_CACHES)
    if splits > 1:
        event = decode_combine_kernel.on(target)[(programs,)](o_part, ml_part, result, KVH, splits,
                                                             G=G, GR=GR, D=D, OUT=out_t)
    return result, event


def decode_attention_result(q, k_cache, v_cache, block_table, seq_lens) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of what :func:`decode_attention` returns, checked as it checks them
    (same UsageErrors), without running: for the torch fake implementation."""
    B, H, _, D, _, _ = _check(q, k_cache, v_cache, block_table, seq_lens, values=False)
    return (B, H, D), operands.dtype_of(q)


def default_splits(target: str, programs: int, max_blocks: int, block_size: int) -> int:
    """Splits of each program's context: enough programs for one per EU of the device
    (``xd.device_properties``), each split at least ``OpTiles.decode_min_split_keys``
    keys; one (no combine) when the context is that short or the programs already fill
    the device; at most MAX_SPLITS."""
    min_keys = configs.decode_tiles(target, HEAD_DIMS[0]).min_split_keys
    # an NVIDIA target: one program a multiprocessor at least (its table's sm_count)
    eus = configs.gpu_of(target).sm_count if configs.is_nvidia(target) else xd.device_properties(target=target).eu_count
    by_device = -(-eus // max(programs, 1))
    by_context = max(1, max_blocks * block_size // min_keys)
    return max(1, min(by_device, by_context, MAX_SPLITS))


def _checked_splits(num_splits, max_blocks: int) -> int:
    if not isinstance(num_splits, int) or isinstance(num_splits, bool) or num_splits < 1:
        raise UsageError(f"decode_attention: num_splits must be a positive int, got {num_splits!r}")
    return min(num_splits, max(max_blocks, 1))


def _check(q, k_cache, v_cache, block_table, seq_lens, values: bool = True):
    if q.ndim != 3 or k_cache.ndim != 4 or tuple(k_cache.shape) != tuple(v_cache.shape):
        raise UsageError(f"decode_attention: q must be [batch, num_heads, D] and k_cache, v_cache one shape "
                         f"[num_blocks, block_size, num_kv_heads, D], got {tuple(q.shape)}, {tuple(k_cache.shape)}, "
                         f"{tuple(v_cache.shape)}")
    B, H, D = (int(s) for s in q.shape)
    NB, BS, KVH, DK = (int(s) for s in k_cache.shape)
    q_name, k_name, v_name = (_name(operands.dtype_of(x)) for x in (q, k_cache, v_cache))
    if q_name not in INPUTS or k_name != v_name or k_name not in (q_name, *FP8_CACHES):
        raise UsageError(f"decode_attention: q must be one of {', '.join(INPUTS)} and k_cache, v_cache one dtype: "
                         f"q's or fp8 ({', '.join(FP8_CACHES)}), got q {q_name}, k_cache {k_name}, v_cache {v_name}")
    if D != DK or D not in HEAD_DIMS:
        raise UsageError(f"decode_attention: head dim of q {D}, of the caches {DK}; supported: {HEAD_DIMS}, equal")
    if BS not in BLOCK_SIZES:
        raise UsageError(f"decode_attention: block_size {BS}; supported: {BLOCK_SIZES}")
    if KVH < 1 or H % KVH:
        raise UsageError(f"decode_attention: num_kv_heads = {KVH} must divide num_heads = {H} (query head h reads "
                         f"kv head h // (num_heads // num_kv_heads))")
    for x, name, shape in ((block_table, "block_table", None), (seq_lens, "seq_lens", (B,))):
        if operands.dtype_of(x) != np.int32:
            raise UsageError(f"decode_attention: {name} must be int32, got {operands.dtype_of(x)}")
        if (shape is not None and tuple(x.shape) != shape) or (shape is None and (x.ndim != 2 or x.shape[0] != B)):
            want = f"({B},)" if shape else f"[{B}, max_blocks]"
            raise UsageError(f"decode_attention: {name} must be {want} (batch {B}), got shape {tuple(x.shape)}")
    max_blocks = int(block_table.shape[1])
    if values and isinstance(seq_lens, np.ndarray) and seq_lens.size and not (
            (seq_lens >= 1).all() and (seq_lens <= max_blocks * BS).all()):
        raise UsageError(f"decode_attention: seq_lens must lie in [1, max_blocks * block_size = {max_blocks * BS}], "
                         f"got {seq_lens.min()} .. {seq_lens.max()}")
    return B, H, KVH, D, BS, max_blocks


def _operand(x, name: str):
    """``x`` as the kernel takes it: a numpy array with unit stride in its last dimension
    as it is, anything else as ``operands.as_array`` makes it."""
    if isinstance(x, np.ndarray) and x.ndim and x.strides[-1] == x.itemsize:
        return x
    return operands.as_array(x, name)


def _name(dtype) -> str:
    return "bfloat16" if dtype == operands.BF16 else np.dtype(dtype).name
