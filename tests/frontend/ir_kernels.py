"""Kernels for the frontend IR tests: each uses one family of language constructs."""
import xetile_dsl as xd
import xetile_dsl.language as xt

SCALE = xt.constexpr(2.0)
LAYOUT = xt.wg_map(sg_layout=[2, 2], sg_data=[16, 16])


@xd.jit
def epilogue(a, b, bias, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """GEMM + bias + ReLU with a bf16 output."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    row = xt.load_tile(xt.init_tile(bias, [0, pid_n * BN], [1, BN]))
    out = xt.maximum(acc + row, 0.0) * SCALE
    xt.store_tile(out.to(xt.bfloat16), xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def softmax(x, y, BM: xt.constexpr, BN: xt.constexpr):
    t = xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, BN])
    v = xt.load_tile(t)
    e = xt.exp(v - xt.max(v, axis=1))
    xt.store_tile(e / e.sum(axis=1), xt.init_tile(y, [xt.program_id(0) * BM, 0], [BM, BN]))


@xd.jit
def math_ops(x, y, n):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    w = xt.exp2(v) + xt.log(v) + xt.log2(v) + xt.sqrt(v) + xt.rsqrt(v) + xt.sin(v) + xt.cos(v)
    w = w + xt.tanh(v) + xt.erf(v) + xt.abs(v) + xt.sigmoid(v) + xt.fma(v, v, 1.0) + xt.minimum(v, n)
    w = xt.where(v > 0, w, -w) + xt.prod(v, 0) + xt.min(v, 1)
    xt.store_tile(w, xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def int_ops(x, y, n):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    w = (v // 3 + v % 5 - (v & 7) | (v ^ n)) * 2
    w = ~w + xt.abs(-v) + xt.maximum(v, n)
    m = (v >= 1) & (v != 4)
    w = xt.where(m, w, 0)
    idx = xt.argmax(v, 1) + xt.arange(0, 16)
    xt.store_tile(w + idx, xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def casts(x, y, z):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 32]))
    f = v.astype(xt.float32) + xt.astype(v, xt.bfloat16).to(xt.float32)
    i = f.to(xt.int32).to(xt.int8)
    xt.store_tile(i, xt.init_tile(y, [0, 0], [8, 32]))
    xt.store_tile(f.to(xt.uint8), xt.init_tile(z, [0, 0], [8, 32]))


@xd.jit
def control(x, y, n, m):
    acc = xt.zeros([8, 16], xt.float32)
    i = 0
    while i < n:
        acc = acc + 1.0
        i = i + 1
    if n > m:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    for j in xt.static_range(3):
        acc = acc + j
    s = n if n > 3 else m
    if s == 0:
        return
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def helper_add(u, v, alpha: xt.constexpr):
    if alpha == 1:
        return u + v
    return u + v * alpha


@xd.jit
def calls(x, y):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(helper_add(v, v, 3.0), xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def shapes_and_atomics(x, y, z):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, 32]))
    t = xt.transpose(v)
    col = xt.sum(v, axis=1)
    b = xt.broadcast_to(col, [16, 32]) + xt.tile_reduce("max", v, [0])
    xt.atomic_rmw("add", b, xt.init_tile(y, [0, 0], [16, 32]))
    xt.store_tile(t, xt.init_tile(z, [0, 0], [32, 16]))


@xd.jit
def scatter(x, y, n):
    offs = xt.arange(0, 16) * 2
    v = xt.load_gather(xt.init_tile(x, offs), offs < n, padding=0.0)
    xt.store_scatter(v + 1.0, xt.init_tile(y, offs), offs < n)


@xd.jit
def layouts(a, bt, c):
    ta = xt.init_tile(a, [0, 0], [32, 32], wg_map=LAYOUT)
    tb = xt.init_tile(bt, [0, 0], [32, 32], order=(0, 1), wg_map=LAYOUT)
    acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), wg_map=LAYOUT)
    acc = xt.tile_conv_layout(acc, xt.wg_map([4, 1], [8, 32]), LAYOUT)
    sg = xt.subgroup_id() + xt.num_subgroups() + xt.num_programs(0)
    xt.store_tile(acc + sg, xt.init_tile(c, [0, 0], [32, 32], wg_map=xt.wg_map([4, 1], [8, 32])))


@xd.jit
def transposed_wg(a, c):
    """A workgroup transpose with both maps given (RFC 2.3's kind, in small)."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [64, 32], wg_map=xt.wg_map([4, 1], [16, 32])))
    w = xt.tile_transpose(v, wg_map=xt.wg_map([1, 4], [32, 16]), source_wg_map=xt.wg_map([4, 1], [16, 32]))
    xt.store_tile(w, xt.init_tile(c, [0, 0], [32, 64], wg_map=xt.wg_map([1, 4], [32, 16])))


@xd.jit
def tf32_mma(a, b, c):
    acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [8, 8])), xt.load_tile(xt.init_tile(b, [0, 0], [8, 16])),
                      input_precision="tf32")
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [8, 16]))
