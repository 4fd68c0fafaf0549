"""Small kernels whose programs meet in atomics (benchmarks/nv_ops_check.py's atomics
cases, tests/nvptx/test_nvptx_atomics.py): each program combines its 4x64 block of ``x``
into one 4x64 ``out`` tile by an atomic of ``KIND`` ("add", "max", "mul", ...), or takes
a ticket from a counter with a scalar atomic add and writes its id at its ticket."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def tile_rmw_kernel(x, out, KIND: xt.constexpr):
    """``out = KIND(out, x[4 p : 4 p + 4])`` for program p, one atomic an element."""
    v = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * 4, 0], [4, 64]))
    xt.atomic_rmw(KIND, v, xt.init_tile(out, [0, 0], [4, 64]))


@xd.jit
def ticket_kernel(count, tickets):
    """Program p takes ``t = count[0]++`` (one atomic) and writes ``tickets[0, t] = p``."""
    t = xt.atomic_rmw("add", 1, count, [0])
    tickets[0, t] = xt.program_id(0)
