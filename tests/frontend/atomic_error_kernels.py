"""Kernels with mistakes in their atomics; each marked line is where the error points."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def bad_sem(lock):
    xt.atomic_cas(lock, [0, 0], 0, 1, sem="seq_cst")  # ERROR bad_sem


@xd.jit
def bad_scope(lock):
    xt.atomic_xchg(lock, [0, 0], 1, scope="system")  # ERROR bad_scope


@xd.jit
def cas_on_floats(x):
    xt.atomic_cas(x, [0, 0], 0.0, 1.0)  # ERROR cas_on_floats


@xd.jit
def index_count(lock):
    xt.atomic_rmw("add", 1, lock, [0])  # ERROR index_count


@xd.jit
def xor_on_floats(x):
    xt.atomic_rmw("xor", 1.0, x, [0, 0])  # ERROR xor_on_floats


@xd.jit
def relaxed_fence(lock):
    xt.fence("relaxed")  # ERROR relaxed_fence


@xd.jit
def cas_on_a_tile(lock):
    xt.atomic_cas(xt.init_tile(lock, [0, 0], [1, 16]), [0, 0], 0, 1)  # ERROR cas_on_a_tile


@xd.jit
def tile_cas_on_floats(x):
    t = xt.init_tile(x, [0, 0], [1, 16])
    xt.atomic_cas(t, 0.0, 1.0)  # ERROR tile_cas_on_floats


@xd.jit
def tile_cas_wrong_shape(x):
    t = xt.init_tile(x, [0, 0], [1, 16])
    xt.atomic_cas(t, xt.load_tile(xt.init_tile(x, [0, 0], [2, 16])), 1)  # ERROR tile_cas_wrong_shape


@xd.jit
def tile_cas_mask_on_block(x):
    t = xt.init_tile(x, [0, 0], [1, 16])
    xt.atomic_cas(t, 0, 1, mask=xt.load_tile(t) > 0)  # ERROR tile_cas_mask_on_block


@xd.jit
def tile_value_in_array_form(lock):
    v = xt.load_tile(xt.init_tile(lock, [0, 0], [1, 16]))
    xt.atomic_rmw("add", v, lock, [0, 0])  # ERROR tile_value_in_array_form


@xd.jit
def element_atomic_in_subgroups(lock, x):
    t = xt.init_tile(x, [0, 0], [16, 16], wg_map=xt.wg_map(sg_layout=[2, 1], sg_data=[8, 16]))
    xt.store_tile(xt.load_tile(t) + 1.0, t)
    xt.atomic_rmw("add", 1, lock, [0, 0])  # ERROR element_atomic_in_subgroups


@xd.jit
def element_atomic_on_slm(lock):
    s = xt.slm_alloc([1, 16], xt.int32)
    xt.atomic_cas(s, [0, 0], 0, 1)  # ERROR element_atomic_on_slm


@xd.jit
def tile_atomic_on_int8(lock):
    t = xt.init_tile(lock, [0, 0], [1, 16])
    xt.atomic_rmw("add", xt.load_tile(t), t)  # ERROR tile_atomic_on_int8
