"""Test kernels: scattered tiles over shared local memory (xt.slm_alloc) — scatter,
masked gather with padding and atomics, each checked against numpy in test_slm_scattered.py."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def slm_permute_kernel(x, idx, y, N: xt.constexpr):
    """y = x with element e written to flat SLM position idx[e] (a permutation), read back
    as a block: ``y.flat[idx] = x``."""
    s = xt.slm_alloc([N, N], xt.float16)
    v = xt.load_tile(xt.init_tile(x, [0, 0], [N, N]))
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [N, N]))
    xt.store_scatter(v, xt.init_tile(s, offs))
    xt.barrier()
    xt.store_tile(xt.load_tile(xt.init_tile(s, [0, 0], [N, N])), xt.init_tile(y, [0, 0], [N, N]))


@xd.jit
def slm_masked_gather_kernel(x, idx, y, N: xt.constexpr):
    """x goes to SLM as a block; y[e] = slm.flat[idx[e]] where idx[e] is even, else -1
    (the padding); odd positions of SLM are never written by a masked scatter."""
    s = xt.slm_alloc([N, N], xt.float32)
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [N, N])), xt.init_tile(s, [0, 0], [N, N]))
    xt.barrier()
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [N, N]))
    v = xt.load_gather(xt.init_tile(s, offs), offs % 2 == 0, padding=-1.0)
    xt.store_tile(v, xt.init_tile(y, [0, 0], [N, N]))


@xd.jit
def slm_histogram_kernel(x, out, N: xt.constexpr, BINS: xt.constexpr):
    """out[0, b] = number of elements of the N x N int32 tile x whose value is b (values
    in [0, BINS)), counted with atomic adds into a zeroed SLM row."""
    s = xt.slm_alloc([1, BINS], xt.int32)
    xt.store_tile(xt.zeros([1, BINS], xt.int32), xt.init_tile(s, [0, 0], [1, BINS]))
    xt.barrier()
    v = xt.load_tile(xt.init_tile(x, [0, 0], [N, N]))
    xt.atomic_rmw("add", xt.full([N, N], 1, xt.int32), xt.init_tile(s, v))
    xt.barrier()
    xt.store_tile(xt.load_tile(xt.init_tile(s, [0, 0], [1, BINS])), xt.init_tile(out, [0, 0], [1, BINS]))
