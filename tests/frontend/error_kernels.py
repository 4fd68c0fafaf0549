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
