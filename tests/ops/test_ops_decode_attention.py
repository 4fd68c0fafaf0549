"""ops.decode_attention (one query per sequence over a paged KV cache, split-K with a
combine) against f64 numpy that gathers the pages (ops_ref.decode_attention_ref, a
derived bound).  The caches are filled with NaN everywhere no sequence reads (unused
blocks, positions past a sequence's length in its last block), so a masked key or value
that leaked into the result would show.  The interpreter runs the random shapes; the CPU
device compiles three variants (pvc: DPAS group with splits and the combine, the
element-wise group on one split; arc: DPAS group); one ISA check on pvc."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from ops_ref import BF16, assert_within, decode_attention_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from xetile_dsl.ops import configs
from xetile_dsl.ops.decode_attention import MAX_SPLITS, decode_split_kernel, default_splits
from xetile_dsl.ops.matmul import XT_DTYPES
from conftest_tools import require_dpnp

RNG = np.random.default_rng(3131)


def _problem(seq_lens, heads, kv_heads, d=64, block_size=16, dtype=np.float16, spare_blocks=3):
    """q, the caches (NaN where unused), a block table of distinct shuffled blocks per
    sequence (its unused entries -1: never read) and the lengths."""
    seq_lens = np.asarray(seq_lens, np.int32)
    per_seq = [-(-int(n) // block_size) for n in seq_lens]
    max_blocks = max(per_seq) + 1                                     # one more column than any needs
    num_blocks = sum(per_seq) + spare_blocks
    ids = RNG.permutation(num_blocks)
    table = np.full((len(seq_lens), max_blocks), -1, np.int32)
    shape = (num_blocks, block_size, kv_heads, d)
    k = np.full(shape, np.nan, np.float32)
    v = np.full(shape, np.nan, np.float32)
    used = 0
    for b, (n, count) in enumerate(zip(seq_lens, per_seq)):
        table[b, :count] = ids[used:used + count]
        used += count
        for j, blk in enumerate(table[b, :count]):
            valid = min(block_size, int(n) - j * block_size)
            k[blk, :valid] = RNG.standard_normal((valid, kv_heads, d))
            v[blk, :valid] = RNG.standard_normal((valid, kv_heads, d))
    q = RNG.standard_normal((len(seq_lens), heads, d))
    return q.astype(dtype), k.astype(dtype), v.astype(dtype), table, seq_lens


def _check(problem, target, num_splits=None, what=""):
    q, k, v, table, lens = problem
    o = ops.decode_attention(q, k, v, table, lens, num_splits=num_splits, target=target)
    assert o.shape == q.shape and o.dtype == q.dtype
    splits = num_splits or default_splits(configs.resolve_target(target), len(lens) * k.shape[2], table.shape[1],
                                          k.shape[1])
    ref, bound = decode_attention_ref(q, k, v, table, lens, splits)
    assert_within(o, ref, bound, f"{target} {what}")
    return o


#: (seq_lens, heads, kv heads, D, block size, dtype, splits): MHA (element-wise), GQA 2,
#: 4, 8, 12, 16 and MQA (DPAS), partial last blocks, seq_len 1, lengths that differ in a
#: batch, blocks of 16, 32, 64
SHAPES = [
    ([1, 17, 40], 4, 4, 64, 16, np.float16, None),          # G = 1: element-wise
    ([33, 5], 8, 2, 64, 32, np.float16, None),              # G = 4: DPAS, Q tile padded to 8 rows
    ([100, 64, 1], 8, 1, 128, 64, BF16, 2),                 # MQA, G = 8, two splits
    ([77, 130], 16, 2, 128, 16, np.float16, 3),             # G = 8, three splits (one empty for b = 0)
    ([50], 6, 3, 64, 16, BF16, 4),                          # G = 2: DPAS, splits of one block
    ([29, 3], 2, 2, 64, 32, np.float32, 2),                 # f32: element-wise
    ([45, 20], 32, 2, 64, 16, np.float16, 2),               # G = 16: two 8-head programs per kv head
    ([30], 12, 1, 128, 64, BF16, None),                     # G = 12: 8 + 4 heads, 64-key blocks in 32-key steps
]


@pytest.mark.parametrize("lens,heads,kv_heads,d,block_size,dtype,splits", SHAPES)
def test_decode_attention_interpreter(lens, heads, kv_heads, d, block_size, dtype, splits):
    _check(_problem(lens, heads, kv_heads, d, block_size, dtype), "interpret", splits,
           f"lens={lens} H={heads} KVH={kv_heads} D={d} BS={block_size}")


def test_decode_attention_random_shapes():
    """Seeded random draws: batch 1 .. 4, lengths 1 .. 200, G from 1, 2, 4, 8, 1 .. 3 kv
    heads, every block size, head dim and 16-bit dtype, the default or 1 .. 4 splits."""
    draw = np.random.default_rng(77)
    for _ in range(4):
        batch, kv_heads = int(draw.integers(1, 5)), int(draw.integers(1, 4))
        group, block_size = int(draw.choice([1, 2, 4, 8])), int(draw.choice([16, 32, 64]))
        d, dtype = int(draw.choice([64, 128])), [np.float16, BF16][int(draw.integers(2))]
        lens = draw.integers(1, 201, batch).tolist()
        splits = [None, 1, 2, 3, 4][int(draw.integers(5))]
        _check(_problem(lens, group * kv_heads, kv_heads, d, block_size, dtype), "interpret", splits,
               f"lens={lens} G={group} KVH={kv_heads} D={d} BS={block_size} {np.dtype(dtype)} splits={splits}")


def test_decode_attention_long_context_picks_several_splits():
    """2050 keys of one sequence and kv head: the default split count comes from the
    device (an EU per program) and the context (OpTiles.decode's fewest keys per split),
    several here, each combined; the same as one split within the bound."""
    problem = _problem([2050], 4, 1, 64, 64, np.float16, spare_blocks=0)
    splits = default_splits("interpret", 1, problem[3].shape[1], 64)
    min_keys = configs.decode_tiles("interpret", 64).min_split_keys
    assert splits == problem[3].shape[1] * 64 // min_keys > 1     # 34 table columns of 64 keys
    several = _check(problem, "interpret", what="default splits")
    single = _check(problem, "interpret", num_splits=1, what="one split")
    assert not np.array_equal(several, single)       # a different summation: the split path ran


def test_decode_attention_split_choice():
    """One split (no combine) when the programs already fill the device's EUs or the
    context is short; never more than MAX_SPLITS."""
    eus = xd.device_properties(target="pvc").eu_count
    assert default_splits("pvc", eus, 1000, 64) == 1
    assert default_splits("pvc", 1, 4, 16) == 1
    assert default_splits("pvc", 2, 10 ** 6, 64) == min(MAX_SPLITS, -(-eus // 2))


def test_decode_attention_cpu_pvc_dpas_group_with_splits():
    """GQA 4 on the CPU device (pvc flavour): the DPAS program and the combine kernel."""
    _check(_problem([70, 1, 33], 8, 2, 64, 16, np.float16), "cpu-pvc", 3, "G=4 splits=3")


def test_decode_attention_device_arrays():
    """dpnp arrays are used in place (the caches' [num_blocks, num_kv_heads, block_size,
    D] views are strided dpnp views, the scratch is allocated on their queue); the
    result is a dpnp array.  The kernels of the test above."""
    dpnp = require_dpnp()
    problem = _problem([70, 1, 33], 8, 2, 64, 16, np.float16)
    o = ops.decode_attention(*(dpnp.asarray(x) for x in problem), num_splits=3, target="cpu-pvc")
    assert type(o).__module__.startswith("dpnp")
    assert_within(dpnp.asnumpy(o), *decode_attention_ref(*problem, 3), "dpnp")


def test_decode_attention_cpu_pvc_elementwise_bf16():
    """MHA (G = 1) bf16 on one split: the element-wise program, which divides and stores."""
    _check(_problem([45, 2], 2, 2, 64, 32, BF16), "cpu-pvc", None, "G=1 bf16")


def test_decode_attention_cpu_arc_dpas_group():
    """ARC (8 lanes, no 2D blocks): the P V operand A re-laid out by lane shuffles."""
    _check(_problem([40, 9], 8, 1, 64, 16, np.float16), "cpu-arc", 2, "G=8 splits=2 arc")


def test_decode_attention_scale():
    q, k, v, table, lens = _problem([20], 4, 4, 64, 16, np.float16)
    o = ops.decode_attention(q, k, v, table, lens, scale=0.5 / 8, target="interpret")
    ref, bound = decode_attention_ref(q * np.float16(0.5), k, v, table, lens)   # 0.5 / sqrt(64): exact on q
    assert_within(o, ref, bound, "scale = 0.5 / sqrt(D)")


@pytest.mark.parametrize("change,message", [
    (lambda p: (p[0][:, :3].copy(), *p[1:]), "must divide num_heads"),
    (lambda p: (*p[:3], p[3].astype(np.int64), p[4]), "block_table must be int32"),
    (lambda p: (*p[:4], p[4].astype(np.int64)), "seq_lens must be int32"),
    (lambda p: (*p[:4], p[4][:1].copy()), r"seq_lens must be \(2,\)"),
    (lambda p: (*p[:4], np.array([0, 5], np.int32)), r"seq_lens must lie in \[1, "),
    (lambda p: (p[0][..., :32].copy(), p[1][..., :32].copy(), p[2][..., :32].copy(), *p[3:]), "head dim"),
    (lambda p: (p[0], p[1][:, :8].copy(), p[2][:, :8].copy(), *p[3:]), "block_size 8"),
    (lambda p: (p[0].astype(np.float32), *p[1:]), "one dtype"),
    (lambda p: (p[0], p[1][..., None], p[2], *p[3:]), "one shape"),
])
def test_decode_attention_refuses_clearly(change, message):
    problem = change(_problem([20, 5], 4, 2, 64, 16, np.float16))
    with pytest.raises(UsageError, match=message):
        ops.decode_attention(*problem, target="interpret")


SPLIT_SIG = {"q": "f16[:,:,:]", "k": "f16[:,:,:,:]", "v": "f16[:,:,:,:]", "block_table": "i32[:,:]",
             "seq_lens": "i32[:]", "o": "f16[:,:,:]", "o_part": "f32[:,:]", "ml_part": "f32[:,:]", "KVH": "i32",
             "S": "i32", "BPS": "i32", "qk_scale": "f32"}


@pytest.mark.parametrize("mma,d,block_size", [(False, 64, 16), (True, 128, 64)])
def test_decode_attention_block_reads_are_2d_block_messages_isa(mma, d, block_size, ocloc_path):
    """pvc (ocloc): each step reads K and V with 2D block messages, no per-lane gathers,
    no SLM, no spill, at the configured keys per step (configs.decode_tiles).  DPAS group
    (8 heads, D = 128, 64-key blocks in two 32-key steps: a loop, since unrolled IGC
    hoisted both steps' loads and spilled 1216 B): K^T in transposed 32-bit messages (16
    keys x 8 dword pairs of D), V in 2D block messages, both products on DPAS (8 rows:
    D / 16 per 16 keys each); element-wise (1 head, D = 64, 16 keys): K and V as [8 keys,
    16] messages."""
    group = 8 if mma else 1
    ks = min(block_size, configs.decode_tiles("pvc", d).keys_per_step)
    consts = {"G": group, "GR": group, "D": d, "BS": block_size, "KS": ks, "OUT": XT_DTYPES["float16"], "MMA": mma,
              "FINAL": False, "KV8": False}
    report = xd.compile(decode_split_kernel, SPLIT_SIG, consts, target="pvc").report()
    hot = report.hot
    assert hot.counts.get("gather", 0) == 0 and hot.counts.get("slm", 0) == 0 and report.spill_bytes == 0
    if mma:     # the hot loop is one step of ks keys: S and P V take D / 16 DPAS per 16 keys each
        assert hot.dpas == 2 * (ks // 16) * (d // 16)
        assert hot.load2d_shapes.get("32b 16r8x1c transpose") == (ks // 16) * (d // 16)
        assert sum(hot.load2d_shapes.values()) == hot.counts["load2d"] and hot.counts["load2d"] > 0
    else:
        assert hot.dpas == 0
        assert hot.load2d_shapes == {"16b 8r16x1c": 2 * (16 // 8) * (64 // 16)}


#: fp8 caches (ml_dtypes' e4m3fn and e5m2): the kernel converts them to q's dtype in
#: registers, exactly (every e4m3fn and e5m2 value is an f16 and a bf16), so the
#: reference is the same f64 attention over the fp8 values and the same bound; the NaN
#: of unused cache positions survives the conversion to fp8 (both formats have NaN)
FP8_SHAPES = [
    ([33, 5], 8, 2, 64, 16, np.float16, 2),                  # G = 4: DPAS, K^T transposed, two splits
    ([20, 3], 4, 4, 64, 32, np.float16, None),               # G = 1: element-wise
    ([50], 8, 1, 128, 16, BF16, 3),                          # MQA, bf16 q: fp8 -> bf16 operands
]


@pytest.mark.parametrize("fp8", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("lens,heads,kv_heads,d,block_size,dtype,splits", FP8_SHAPES)
def test_decode_attention_fp8_cache_interpreter(fp8, lens, heads, kv_heads, d, block_size, dtype, splits):
    _check(_fp8_problem(_problem(lens, heads, kv_heads, d, block_size, dtype), fp8), "interpret", splits,
           f"{fp8} G={heads // kv_heads}")


@pytest.mark.parametrize("fp8,shape", [("float8_e4m3fn", 0), ("float8_e5m2", 1)])
def test_decode_attention_fp8_cache_cpu_pvc(fp8, shape):
    """The CPU device: e4m3fn through the DPAS program and the combine, e5m2 element-wise."""
    lens, heads, kv_heads, d, block_size, dtype, splits = FP8_SHAPES[shape]
    _check(_fp8_problem(_problem(lens, heads, kv_heads, d, block_size, dtype), fp8), "cpu-pvc", splits, fp8)


def test_decode_attention_fp8_cache_quantises_the_values():
    """The fp8 result is attention over the rounded cache, not the original one: e4m3fn
    keeps 3 mantissa bits, so the two differ by far more than the bound."""
    problem = _problem([40], 4, 2, 64, 16, np.float16)
    o = ops.decode_attention(*_fp8_problem(problem, "float8_e4m3fn"), target="interpret")
    ref, bound = decode_attention_ref(*problem)
    assert (np.abs(o.astype(np.float64) - ref) > bound).any()


@pytest.mark.parametrize("k_dtype,v_dtype", [("float8_e4m3fn", "float8_e5m2"), ("float8_e4m3fn", "float16")])
def test_decode_attention_fp8_caches_of_two_dtypes_are_refused(k_dtype, v_dtype):
    import ml_dtypes
    q, k, v, table, lens = _problem([20], 4, 2, 64, 16, np.float16)
    with pytest.raises(UsageError, match="k_cache, v_cache one dtype: q's or fp8"):
        ops.decode_attention(q, k.astype(getattr(ml_dtypes, k_dtype, np.float16)),
                             v.astype(getattr(ml_dtypes, v_dtype, np.float16)), table, lens, target="interpret")


def _fp8_problem(problem, fp8: str):
    import ml_dtypes
    q, k, v, table, lens = problem
    dt = getattr(ml_dtypes, fp8)
    return q, k.astype(dt), v.astype(dt), table, lens
