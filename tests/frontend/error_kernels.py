"""Malformed kernels for the error-message tests (line numbers are asserted: keep layout)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def bad_tile_shape(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr):
    ta = xt.init_tile(a, [0, 0], [BM, 20])
    tb = xt.init_tile(b, [0, 0], [20, BN])
    acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb))  # line 10
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


@xd.jit
def bad_accumulator(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    ta = xt.init_tile(a, [0, 0], [BM, BK])
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float16)
    acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)  # line 19
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


@xd.jit
def runtime_tile_shape(a, K):
    t = xt.init_tile(a, [0, 0], [K, 16])  # line 25


@xd.jit
def unsupported_syntax(a, K):
    with K:  # line 30
        K = K - 1


@xd.jit
def undefined_name(a, K):
    t = xt.init_tile(a, [0, 0], [16, undefined_thing])  # line 36


@xd.jit
def shape_mismatch(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    w = xt.load_tile(xt.init_tile(a, [0, 0], [16, 8]))
    s = v + w  # line 43


@xd.jit
def loop_type_change(a, K):
    acc = xt.zeros([8, 16], xt.float32)
    for k in range(0, K, 16):  # line 49
        acc = acc.to(xt.float16)


@xd.jit
def branch_type_mismatch(a, K):
    v = xt.zeros([8, 16], xt.float32)
    if K > 2:  # line 56
        v = xt.zeros([8, 16], xt.int32)
    else:
        v = xt.zeros([8, 16], xt.float32)


@xd.jit
def runtime_arange(a, K):
    r = xt.arange(0, K)  # line 64


@xd.jit
def where_needs_bool(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    r = xt.where(v, v, 0.0)  # line 70


@xd.jit
def tile_condition(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    if v > 0:  # line 76
        v = -v


@xd.jit
def return_in_loop(a, K):
    for k in range(K):
        return  # line 83


@xd.jit
def store_wrong_dtype(a, K):
    v = xt.zeros([8, 16], xt.float32)
    xt.store_tile(v, xt.init_tile(a, [0, 0], [8, 16]))  # line 89


@xd.jit
def float_floordiv(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    w = v // 2  # line 95


@xd.jit
def unsupported_call(a, K):
    s = sorted([K, 1])  # line 100


@xd.jit
def break_in_loop(a, K):
    for k in range(K):
        break  # line 106


@xd.jit
def invert_float(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    w = ~v  # line 112


@xd.jit
def bad_axis(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    s = xt.sum(v, axis=2)  # line 118


@xd.jit
def returns_value(a, K):
    return K  # line 123


@xd.jit
def store_wrong_shape(a, K):
    v = xt.zeros([16, 16], xt.float16)
    xt.store_tile(v, xt.init_tile(a, [0, 0], [8, 16]))  # line 129


@xd.jit
def non_constexpr_reduction_axis(a, K):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [8, 16]))
    s = xt.max(v, axis=K)  # line 135


@xd.jit
def index_tile_value(a, K):
    r = xt.arange(0, 16)
    col = r[3]  # line 141
