"""Kernels with mistaken masks on tiles (tests/frontend/test_mask_errors.py reads the line numbers)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def wrong_shape(a, n):
    cols = xt.arange(0, 8)
    v = xt.load_tile(xt.init_tile(a, [0, 0], [16, 32]), mask=cols < n)  # line 9
    xt.store_tile(v, xt.init_tile(a, [0, 0], [16, 32]))


@xd.jit
def not_boolean(a, n):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [16, 32]))
    xt.store_tile(v, xt.init_tile(a, [0, 0], [16, 32]), mask=xt.arange(0, 32) + n)  # line 16


@xd.jit
def other_is_a_string(a, n):
    t = xt.init_tile(a, [0, 0], [16, 32])
    v = xt.load_tile(t, mask=xt.arange(0, 32) < n, other="inf")  # line 22
    xt.store_tile(v, t)


@xd.jit
def other_does_not_fit(a, n):
    t = xt.init_tile(a, [0, 0], [16, 32])
    v = xt.load_tile(t, mask=xt.arange(0, 32) < n, other=float("-inf"))  # line 29
    xt.store_tile(v, t)


@xd.jit
def other_is_an_array(a, n):
    t = xt.init_tile(a, [0, 0], [16, 32])
    v = xt.load_tile(t, mask=xt.arange(0, 32) < n, other=a)  # line 36
    xt.store_tile(v, t)


@xd.jit
def scattered_load(a, n):
    offs = xt.arange(0, 16)
    v = xt.load_tile(xt.init_tile(a, offs), mask=offs < n)  # line 43
    xt.store_tile(v, xt.init_tile(a, [0, 0], [1, 16]))


@xd.jit
def scattered_store(a, n):
    offs = xt.arange(0, 16)
    v = xt.load_tile(xt.init_tile(a, [0, 0], [1, 16]))
    xt.store_tile(v, xt.init_tile(a, offs), mask=offs < n)  # line 51


@xd.jit
def other_without_mask(a, n):
    t = xt.init_tile(a, [0, 0], [16, 32])
    v = xt.load_tile(t, other=n)  # line 57
    xt.store_tile(v, t)


@xd.jit
def float_scalar_other_on_ints(a, x):
    t = xt.init_tile(a, [0, 0], [16, 32])
    v = xt.load_tile(t, mask=xt.arange(0, 32) < 3, other=x)  # line 64
    xt.store_tile(v, t)


@xd.jit
def loop_carried_store(a, n):
    t = xt.init_tile(a, [0, 0], [16, 32])
    v = xt.load_tile(t)
    for _ in range(2):
        xt.store_tile(v, t, mask=v > 0)  # line 73
        t = xt.update_tile_offset(t, 16, 0)


@xd.jit
def narrow_lane_store(a, n):
    offs = xt.arange(0, 8)
    v = xt.load_tile(xt.init_tile(a, [0], [8]))
    xt.store_tile(v + 1.0, xt.init_tile(a, [0], [8]), mask=offs < n)  # line 81


@xd.jit
def narrow_gather(a, n):
    t = xt.init_tile(a, xt.arange(0, 8) + n)
    xt.store_tile(xt.load_gather(t, xt.arange(0, 8) < 8), xt.init_tile(a, [0], [8]))  # line 87
