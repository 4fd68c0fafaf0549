"""Kernels for the array-element and runtime-builtin tests (test_array_elements.py).
Each error line carries a ``# <- name`` marker the test finds, so the layout may change."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def read_write(x, out):
    pid = xt.program_id(0)
    n = x[pid, 1]
    out[0, pid] = n * 2


@xd.jit
def sizes_as_bounds(sizes, a, c, BM: xt.constexpr):
    g = xt.program_id(0)
    m = sizes[g, 0]
    row = sizes[g, 1]
    for i in range(0, m, BM):
        t = xt.load_tile(xt.init_tile(a, [row + i, 0], [BM, 16]))
        xt.store_tile(t, xt.init_tile(c, [row + i, 0], [BM, 16]))


@xd.jit
def builtins_on_scalars(x, out):
    pid = xt.program_id(0)
    out[0, 0] = min(pid, x[0, 0], 4) + max(pid, 1) + abs(x[0, 1] - pid)
    out[0, 1] = min(3, 5) + max([2, 7]) + abs(-4)  # folded


@xd.jit
def carried_numbers(f, out):
    pid = xt.program_id(0)
    v = 0
    if pid > 2:
        v = pid
    acc = 0
    for i in range(pid):
        acc += f[0, i]
    out[0, 0] = acc + v


@xd.jit
def wrong_count(x, out):
    out[0, 0] = x[1]  # <- wrong_count


@xd.jit
def float_index(x, out):
    i = xt.astype(xt.program_id(0), xt.float32)
    out[0, 0] = x[i, 0]  # <- float_index


@xd.jit
def item_of_many(x, out):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [1, 16]))
    out[0, 0] = xt.item(t)  # <- item_of_many


@xd.jit
def tile_into_element(x, out):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [1, 16]))
    out[0, 0] = t  # <- tile_into_element


@xd.jit
def slice_of_array(x, out):
    out[0, 0] = x[0:2, 0]  # <- slice_of_array


@xd.jit
def negative_index(x, out):
    out[0, 0] = x[-1, 0]  # <- negative_index


@xd.jit
def wrong_count_store(x, out):
    out[0, 0, 0] = 1.0  # <- wrong_count_store


ROW = 2  # a module global used as an index


@xd.jit
def global_index(x, out):
    out[ROW, 0] = x[ROW, 1]
    out[ROW, 1] += x[0, ROW]
