"""Kernels on the element atomics: a spin lock around a read-modify-write of a tile, a
ticket counter, every atomic_rmw kind on one element, and layer norm's backward pass
with the partial dW/dB sums guarded by GROUP locks (Triton's tutorial scheme: a lock and
a count per group; the first writer stores, the others accumulate)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def spin_lock_kernel(lock, total, SEM_ACQ: xt.constexpr, SEM_REL: xt.constexpr, SCOPE: xt.constexpr):
    """Every program adds its id + 1 to the 16 elements of ``total`` under ``lock[0, 0]``
    (a plain load and store: only the lock makes the sum right)."""
    pid = xt.program_id(0)
    while xt.atomic_cas(lock, [0, 0], 0, 1, sem=SEM_ACQ, scope=SCOPE) == 1:
        pass
    t = xt.init_tile(total, [0, 0], [1, 16])
    xt.store_tile(xt.load_tile(t) + (pid + 1), t)
    xt.atomic_xchg(lock, [0, 0], 0, sem=SEM_REL, scope=SCOPE)


@xd.jit
def ticket_kernel(counter, tickets):
    """Each program draws a ticket (the counter's old value) and writes it at its id."""
    pid = xt.program_id(0)
    ticket = xt.atomic_rmw("add", 1, counter, [0, 0], sem="relaxed")
    xt.store_tile(xt.full([1, 1], ticket, xt.int32), xt.init_tile(tickets, [0, pid], [1, 1]))


@xd.jit
def element_rmw_kernel(x, vals, old, KIND: xt.constexpr):
    """Program p combines ``vals[0, p]`` into ``x[p % 2, 1]`` with ``KIND``; the old element
    goes to ``old[0, p]``."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(vals, [0, pid], [1, 1]))
    seen = xt.atomic_rmw(KIND, xt.sum(v), x, [pid % 2, 1])
    xt.store_tile(xt.full([1, 1], seen, vals.dtype), xt.init_tile(old, [0, pid], [1, 1]))


@xd.jit
def layer_norm_bwd_dx_fused(dx, dy, dw_part, db_part, x, w, mean, rstd, lock, count, N,
                            GROUP: xt.constexpr, BN: xt.constexpr):
    """One row per program: dx, and the row's dW/dB terms added into row ``row % GROUP`` of
    ``dw_part`` / ``db_part`` under that row's lock (``N <= BN``)."""
    row = xt.program_id(0)
    inside = xt.arange(0, BN) < N
    xv = xt.load_tile(xt.init_tile(x, [row, 0], [1, BN]))
    dyv = xt.load_tile(xt.init_tile(dy, [row, 0], [1, BN]))
    wv = xt.load_tile(xt.init_tile(w, [0, 0], [1, BN]))
    mu = xt.load_tile(xt.init_tile(mean, [row, 0], [1, 1]))
    rs = xt.load_tile(xt.init_tile(rstd, [row, 0], [1, 1]))
    xhat = xt.where(inside, (xv - mu) * rs, 0.0)
    wdy = wv * dyv
    c1 = xt.sum(xhat * wdy, axis=1) / N
    c2 = xt.sum(wdy, axis=1) / N
    xt.store_tile((wdy - (xhat * c1 + c2)) * rs, xt.init_tile(dx, [row, 0], [1, BN]))
    partial_dw = dyv * xhat
    partial_db = dyv
    g = row % GROUP
    tdw = xt.init_tile(dw_part, [g, 0], [1, BN])
    tdb = xt.init_tile(db_part, [g, 0], [1, BN])
    while xt.atomic_cas(lock, [g, 0], 0, 1, sem="acquire") == 1:
        pass
    if xt.atomic_xchg(count, [g, 0], 1, sem="relaxed") != 0:  # not the group's first writer
        partial_dw = partial_dw + xt.load_tile(tdw)
        partial_db = partial_db + xt.load_tile(tdb)
    xt.store_tile(partial_dw, tdw)
    xt.store_tile(partial_db, tdb)
    xt.atomic_xchg(lock, [g, 0], 0, sem="release")


@xd.jit
def layer_norm_bwd_dwdb(dw_part, db_part, dw, db, GROUP: xt.constexpr, BN: xt.constexpr):
    """dW, dB: the GROUP partial rows summed."""
    col = xt.program_id(0) * BN
    acc_w = xt.zeros([1, BN], xt.float32)
    acc_b = xt.zeros([1, BN], xt.float32)
    for g in range(0, GROUP):
        acc_w = acc_w + xt.load_tile(xt.init_tile(dw_part, [g, col], [1, BN]))
        acc_b = acc_b + xt.load_tile(xt.init_tile(db_part, [g, col], [1, BN]))
    xt.store_tile(acc_w, xt.init_tile(dw, [0, col], [1, BN]))
    xt.store_tile(acc_b, xt.init_tile(db, [0, col], [1, BN]))


@xd.jit
def tile_atomics_kernel(x, out, KIND: xt.constexpr, SEM: xt.constexpr):
    """Program g folds rows 4g .. 4g+3 of ``x`` into ``out`` with the tile atomic ``KIND``."""
    g = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [g * 4, 0], [4, 16]))
    t = xt.init_tile(out, [0, 0], [4, 16])
    if KIND == "xchg":
        xt.atomic_xchg(t, v, sem=SEM)
    else:
        xt.atomic_rmw(KIND, v, t, sem=SEM, scope="device")


@xd.jit
def publish_kernel(data, flag, SEM: xt.constexpr, SCOPE: xt.constexpr):
    """Store a tile, then raise a flag with a relaxed exchange after a fence: the fence alone
    orders the store before the flag."""
    t = xt.init_tile(data, [0, 0], [1, 16])
    xt.store_tile(xt.load_tile(t) + 1.0, t)
    xt.fence(SEM, SCOPE)
    xt.atomic_xchg(flag, [0, 0], 1, sem="relaxed")


@xd.jit
def handoff_kernel(flag, out):
    """Program 0 waits until the last program has raised ``flag``, then records what it saw:
    it can finish only if the programs interleave."""
    pid = xt.program_id(0)
    if pid == xt.num_programs(0) - 1:
        xt.atomic_xchg(flag, [0, 0], 7, sem="release")
    if pid == 0:
        while xt.atomic_rmw("add", 0, flag, [0, 0], sem="acquire") == 0:
            pass
        xt.store_tile(xt.full([1, 1], 1, xt.int32), xt.init_tile(out, [0, 0], [1, 1]))


@xd.jit
def never_released_kernel(lock):
    """Every program takes the lock and none gives it back: all but the first spin forever."""
    while xt.atomic_cas(lock, [0, 0], 0, 1, sem="acquire") == 1:
        pass


@xd.jit
def tile_cas_kernel(x, cmp, val, old, claim, seen, SEM: xt.constexpr, SCOPE: xt.constexpr):
    """Program g compare-and-swaps its own rows 4g .. 4g+3 of ``x`` (``cmp``/``val`` tiles,
    old values to ``old``), then every program claims the shared block ``claim`` with the
    scalars cmp 0, val g + 1 (old values to ``seen``): one program wins each element."""
    g = xt.program_id(0)
    mine = [g * 4, 0]
    o = xt.atomic_cas(xt.init_tile(x, mine, [4, 16]), xt.load_tile(xt.init_tile(cmp, mine, [4, 16])),
                      xt.load_tile(xt.init_tile(val, mine, [4, 16])), sem=SEM, scope=SCOPE)
    xt.store_tile(o, xt.init_tile(old, mine, [4, 16]))
    c = xt.atomic_cas(xt.init_tile(claim, [0, 0], [4, 16]), 0, g + 1, sem=SEM, scope=SCOPE)
    xt.store_tile(c, xt.init_tile(seen, mine, [4, 16]))


@xd.jit
def scattered_cas_kernel(x, idx, cmp, val, old, C: xt.constexpr):
    """A compare-and-swap through a scattered tile, lanes with ``idx % 3 == 1`` masked off."""
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [1, C]))
    o = xt.atomic_cas(xt.init_tile(x, offs), xt.load_tile(xt.init_tile(cmp, [0, 0], [1, C])),
                      xt.load_tile(xt.init_tile(val, [0, 0], [1, C])), mask=offs % 3 != 1)
    xt.store_tile(o, xt.init_tile(old, [0, 0], [1, C]))
