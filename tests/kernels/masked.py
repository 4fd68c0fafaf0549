"""Kernels with masked block tiles (``load_tile(..., mask=, other=)``,
``store_tile(..., mask=)``), shared by the e2e and ISA tests."""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def softmax_rows(x, y, N, BM: xt.constexpr, BN: xt.constexpr):
    """Triton's fused-softmax row: the columns past N load as -inf."""
    row = xt.program_id(0) * BM
    cols = xt.arange(0, BN)
    v = xt.load_tile(xt.init_tile(x, [row, 0], [BM, BN]), mask=cols < N, other=float("-inf"))
    e = xt.exp(v - xt.max(v, axis=1))
    xt.store_tile(e / xt.sum(e, axis=1), xt.init_tile(y, [row, 0], [BM, BN]))


@xd.jit
def softmax_rows_unmasked(x, y, N, BM: xt.constexpr, BN: xt.constexpr):
    """softmax_rows without the mask (the message count to compare with)."""
    row = xt.program_id(0) * BM
    v = xt.load_tile(xt.init_tile(x, [row, 0], [BM, BN]))
    e = xt.exp(v - xt.max(v, axis=1))
    xt.store_tile(e / xt.sum(e, axis=1), xt.init_tile(y, [row, 0], [BM, BN]))


@xd.jit
def masked_copy(x, y, n_rows, n_cols, fill, BM: xt.constexpr, BN: xt.constexpr, LOAD: xt.constexpr,
                STORE: xt.constexpr, OTHER: xt.constexpr, PAD: xt.constexpr):
    """y = x through one [BM, BN] tile per program, with the load mask LOAD and the
    store mask STORE (names of the masks below; "" for none); OTHER: a number, "scalar"
    (the runtime ``fill``) or None (the default, 0)."""
    r0, c0 = xt.program_id(0) * BM, xt.program_id(1) * BN
    rows = xt.transpose(xt.arange(0, BM))
    cols = xt.arange(0, BN)
    tx = xt.init_tile(x, [r0, c0], [BM, BN])
    if LOAD == "":
        v = xt.load_tile(tx, padding=PAD)
    else:
        if LOAD == "cols":
            m = cols + c0 < n_cols                       # [1, BN] row, broadcast
        elif LOAD == "rows":
            m = rows + r0 < n_rows                       # [BM, 1] column, broadcast
        elif LOAD == "both":
            m = (rows + r0 < n_rows) & (cols + c0 < n_cols)
        else:
            m = xt.load_tile(tx) > 0                     # not an edge mask
        if OTHER == "scalar":
            v = xt.load_tile(tx, padding=PAD, mask=m, other=fill)
        else:
            v = xt.load_tile(tx, padding=PAD, mask=m, other=OTHER)
    ty = xt.init_tile(y, [r0, c0], [BM, BN])
    if STORE == "":
        xt.store_tile(v, ty)
    elif STORE == "cols":
        xt.store_tile(v, ty, mask=cols + c0 < n_cols)
    elif STORE == "rows":
        xt.store_tile(v, ty, mask=rows + r0 < n_rows)          # row edge masks: a block store, fewer rows
    elif STORE == "rows_triton":                                 # Triton's spelling: a 1-D index made a column
        offs_m = r0 + xt.arange(0, BM)
        xt.store_tile(v, ty, mask=offs_m[:, None] < n_rows)
    elif STORE == "rows_swapped":
        xt.store_tile(v, ty, mask=(n_rows - 1 >= r0 + rows) & (rows + 2 < BM + n_cols))
    else:
        xt.store_tile(v, ty, mask=(v > 0) | (cols % 3 == 0))


@xd.jit
def half_rows(x, y, HALF: xt.constexpr, BM: xt.constexpr):
    """Program p writes y[:, p*HALF : (p+1)*HALF] = x + p + 1 through a tile covering the
    whole row, masking out the other program's half: the result is exact only if a
    masked-off element is never written (no read-modify-write of the other half)."""
    p = xt.program_id(0)
    cols = xt.arange(0, 2 * HALF)
    ty = xt.init_tile(y, [0, 0], [BM, 2 * HALF])
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, 2 * HALF])) + (p + 1)
    mine = (cols >= p * HALF) & (cols < p * HALF + HALF)
    for _ in range(64):  # many rounds: the two programs' stores interleave
        xt.store_tile(v, ty, mask=mine)


@xd.jit
def moved_store(x, y, n_cols, BM: xt.constexpr, BN: xt.constexpr):
    """A masked store through a tile moved by update_tile_offset (its offsets are the
    init's plus the move)."""
    cols = xt.arange(0, BN)
    tx = xt.init_tile(x, [0, 0], [BM, BN])
    ty = xt.update_tile_offset(xt.init_tile(y, [0, 0], [BM, BN]), BM, BN)
    xt.store_tile(xt.load_tile(tx), ty, mask=cols + BN < n_cols)


@xd.jit
def transposed_copy(x, y, n, BM: xt.constexpr, BN: xt.constexpr):
    """y^T's [BM, BN] view (order=(0, 1)) = x^T's, masked by the view's columns < n (the
    arrays' rows) on the load (other -1) and by the view's rows < n - 2 on the store."""
    cols = xt.arange(0, BN)
    rows = xt.transpose(xt.arange(0, BM))
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN], order=(0, 1)), mask=cols < n, other=-1.0)
    xt.store_tile(v, xt.init_tile(y, [0, 0], [BM, BN], order=(0, 1)), mask=rows < n - 2)


@xd.jit
def slm_masked(x, y, n, BM: xt.constexpr, BN: xt.constexpr):
    """x through a shared-local-memory buffer: a masked store into SLM (columns < n) over
    a buffer filled with -1, read back whole."""
    s = xt.slm_alloc([BM, BN], xt.float32)
    ts = xt.init_tile(s, [0, 0], [BM, BN])
    xt.store_tile(xt.full([BM, BN], -1.0, xt.float32), ts)
    xt.barrier()
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN])), ts, mask=xt.arange(0, BN) < n)
    xt.barrier()
    xt.store_tile(xt.load_tile(ts), xt.init_tile(y, [0, 0], [BM, BN]))


@xd.jit
def maybe_masked(x, y, M: xt.constexpr, OTHER: xt.constexpr):
    """mask=M and other=OTHER given as constexprs: None means no mask (a plain tile access)."""
    cols = xt.arange(0, 32)
    m = cols < 5 if M else None
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 32]), mask=m, other=OTHER)
    xt.store_tile(v, xt.init_tile(y, [0, 0], [8, 32]), mask=m)
