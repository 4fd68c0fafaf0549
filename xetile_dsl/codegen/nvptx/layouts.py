"""Which lane of a warp holds which element of each subgroup-level tile value.

A layout maps (lane, slot) to a tile position ``(r0(lane) + dr, c0(lane) + dc)``: the
lane part is a few bit fields of the lane id, the slot part static.  Kinds:

* ``cols``  lane l holds columns v l .. v l + v - 1, then the same + 32 v, ... of every
  row (the columns a multiple of the warp; v = :func:`cols_run`, 8 where the columns are
  a multiple of 256): each lane's run of v elements is one 16-byte access (f16) where
  the array is aligned, and a warp reads 32 v consecutive elements;
* ``rep``   every lane holds every element (narrow tiles, reduction results);
* ``mma_a``, ``mma_b``, ``mma_c``: the fragments of ``mma.sync.aligned.m16n8k16``
  (PTX ISA, "Matrix Fragments for mma.m16n8k16"): groupID = lane >> 2, threadID_in_group
  = lane & 3; A's a0..a7 at (g, 2t + {0,1}), (g + 8, ...), (g, 2t + 8 + ...), (g + 8, 2t + 8 + ...);
  B's b0..b3 at (k = 2t + {0,1}, n = g), (2t + 8 + ..., g); C's c0..c3 at (g, 2t + {0,1}),
  (g + 8, 2t + {0,1});
* ``mma_c_row`` a one-row value broadcast over the rows of an ``mma_c`` one (an epilogue
  bias row, a column reduction's result): lane l holds the columns its C slots have,
  2t + {0,1} + 8j, so the broadcast reads its own registers (the 8 lanes of one t hold
  the same values);
* ``mma_c_col`` a one-column value of an ``mma_c`` one's rows (a row reduction's result,
  a flash attention's running max and sum, a column broadcast into C): lane l holds the
  rows its C slots have, g + 8h (+ 16i), so the 4 lanes of one g hold the same values;
* ``mma_b_row`` a one-row value broadcast over the rows of an ``mma_b`` one (a weight
  tile's per-column scales): lane l holds the columns its B slots have, g + 8j, so the
  broadcast reads its own registers (the 4 lanes of one g hold the same values);
* ``mma_b_col`` a one-column value broadcast over the columns of an ``mma_b`` one (a
  mask of its rows): lane l holds the rows its B slots have, 2t + {0, 1, 8, 9} (+ 16i);
* ``mma_c_col_t`` the [1, n] transpose of an ``mma_c_col`` value (a flash attention's
  lse row): held in that value's registers, so the transpose moves nothing; a store
  writes them through the transposed tile (:func:`.warp_ops.store`).

An ``mma_c`` value that is a tile_mma's A operand (a flash attention's P) keeps its
layout: the C fragments of two 16 x 8 blocks side by side are the A fragment of their
16 x 16 block, lane for lane (``c_as_a``), so the emitter only renames registers.

:func:`assign` chooses one per vector value: the tile_mma operands and accumulators
take the fragment layouts, which flow through loop-carried values and element-wise
ops; every other value takes ``cols`` or ``rep`` by its shape.  It marks each op with
the layout of its result (``nv.layout``), so the stage text shows the choice.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr, VectorType
from xdsl.ir import Operation, SSAValue

from ...errors import LoweringError

WARP = 32
LAYOUT_ATTR = "nv.layout"
#: the kinds whose rows (columns) a program's warp grid splits: each warp row (column)
#: holds its own part; the other kinds hold the whole extent in every warp row (column)
_SPLIT_ROWS = ("mma_a", "mma_c", "mma_c_col")
_SPLIT_COLS = ("mma_b", "mma_c", "mma_c_row", "cols", "mma_b_row")


@dataclass(frozen=True)
class Layout:
    """``shape`` is the whole tile of the program; ``warps`` (rows, columns) the grid of
    warps the fragment kinds split it over (1 x 1: one warp holds it all): ``mma_c``
    blocks of ``shape / warps``, ``mma_a`` the rows of warp row ``w // warps[1]``,
    ``mma_b`` the columns of warp column ``w % warps[1]``.

    A ``cols`` value of a program of ``1 x W`` warps (a whole-row kernel) is split along
    its columns: warp w holds columns ``w * cols / W`` onwards, in the ``cols`` layout of
    that part.

    >>> Layout("mma_c", (128, 128), (2, 2)).sub
    (64, 64)
    >>> Layout("cols", (1, 8192), (1, 16)).sub, Layout("cols", (1, 8192), (1, 16)).warp_steps()
    ((1, 512), (0, 512))
    """

    kind: str
    shape: tuple[int, int]
    warps: tuple[int, int] = (1, 1)

    @property
    def sub(self) -> tuple[int, int]:
        """The part of the tile one warp holds."""
        (rows, cols), (wr, wc) = self.shape, self.warps
        return rows // wr if self.kind in _SPLIT_ROWS else rows, cols // wc if self.kind in _SPLIT_COLS else cols

    def warp_steps(self) -> tuple[int, int]:
        """Warp w's part starts at row ``(w // warps[1]) * r`` and column ``(w % warps[1]) * c``
        for (r, c) these steps (0 where the kind keeps the whole extent)."""
        sub_r, sub_c = self.sub
        return (sub_r if self.kind in _SPLIT_ROWS and self.warps[0] > 1 else 0,
                sub_c if self.kind in _SPLIT_COLS and self.warps[1] > 1 else 0)

    def warp_copies(self) -> tuple[bool, bool]:
        """Whether every warp row (column) of the program's grid holds a copy of the same
        elements: the grid splits that extent, the kind keeps it whole.

        >>> Layout("mma_c_row", (1, 64), (4, 2)).warp_copies(), Layout("mma_c", (64, 64), (4, 2)).warp_copies()
        ((True, False), (False, False))
        """
        return (self.warps[0] > 1 and self.kind not in _SPLIT_ROWS, self.warps[1] > 1 and self.kind not in _SPLIT_COLS)

    def lane_base(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(r0, c0) of a lane as (shift, mask, multiplier): ``((lane >> s) & m) * k``."""
        zero = (0, 0, 0)
        return {"cols": (zero, (0, 31, cols_run(self.sub[1]))), "rep": (zero, zero), "mma_a": ((2, 7, 1), (0, 3, 2)),
                "mma_b": ((0, 3, 2), (2, 7, 1)), "mma_c": ((2, 7, 1), (0, 3, 2)),
                "mma_c_row": (zero, (0, 3, 2)), "mma_c_col": ((2, 7, 1), zero),
                "mma_c_col_t": (zero, (2, 7, 1)), "mma_b_row": (zero, (2, 7, 1)),
                "mma_b_col": ((0, 3, 2), zero)}[self.kind]

    def slots(self) -> list[tuple[int, int]]:
        """(dr, dc) of each slot a lane holds, in order (within its warp's part)."""
        rows, cols = self.sub
        if self.kind == "cols":
            v = cols_run(cols)
            return [(r, WARP * v * j + e) for r in range(rows) for j in range(cols // (WARP * v)) for e in range(v)]
        if self.kind == "rep":
            return [(r, c) for r in range(rows) for c in range(cols)]
        if self.kind == "mma_a":
            frag = [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
            return [(16 * mi + dr, 16 * ki + dc) for mi in range(rows // 16) for ki in range(cols // 16)
                    for dr, dc in frag]
        if self.kind == "mma_b":
            frag = [(0, 0), (1, 0), (8, 0), (9, 0)]
            return [(16 * ki + dr, 8 * ni + dc) for ki in range(rows // 16) for ni in range(cols // 8)
                    for dr, dc in frag]
        if self.kind == "mma_c_row":
            return [(r, 8 * ni + dc) for r in range(rows) for ni in range(cols // 8) for dc in (0, 1)]
        if self.kind == "mma_c_col":
            return [(16 * mi + dr, c) for mi in range(rows // 16) for dr in (0, 8) for c in range(cols)]
        if self.kind == "mma_b_col":
            return [(16 * ki + dr, c) for ki in range(rows // 16) for dr in (0, 1, 8, 9) for c in range(cols)]
        if self.kind == "mma_b_row":
            return [(r, 8 * ni) for r in range(rows) for ni in range(cols // 8)]
        if self.kind == "mma_c_col_t":
            return [(dc, dr) for dr, dc in self.transposed().slots()]
        frag = [(0, 0), (0, 1), (8, 0), (8, 1)]
        return [(16 * mi + dr, 8 * ni + dc) for mi in range(rows // 16) for ni in range(cols // 8)
                for dr, dc in frag]

    def owned_once(self) -> bool:
        """Whether each element lives in exactly one lane (else: every lane has it)."""
        return self.kind not in ("rep", "mma_c_row", "mma_c_col", "mma_c_col_t", "mma_b_row", "mma_b_col")

    def transposed(self) -> "Layout":
        """The ``mma_c_col`` layout an ``mma_c_col_t`` value is the transpose of."""
        return Layout("mma_c_col", self.shape[::-1], self.warps)


def cols_run(cols: int) -> int:
    """Consecutive columns a lane holds in a ``cols`` layout of ``cols`` columns: 8 (16
    bytes of f16, 32 of f32) where 32 lanes x 8 divide them, else 4, 2, 1.

    >>> cols_run(256), cols_run(1024), cols_run(96)
    (8, 8, 1)
    """
    return next((v for v in (8, 4, 2) if cols % (WARP * v) == 0), 1)


def default_layout(shape: tuple[int, int]) -> Layout:
    return Layout("cols" if shape[1] % WARP == 0 else "rep", shape)


_FRAGMENT_MULTIPLE = {"mma_a": (16, 16), "mma_b": (16, 8), "mma_c": (16, 8), "mma_c_row": (1, 8),
                      "mma_c_col": (16, 1), "mma_c_col_t": (1, 16), "mma_b_row": (1, 8),
                      "mma_b_col": (16, 1)}


class _Groups:
    """Union-find over SSA values that must share a layout."""

    def __init__(self):
        self.parent: dict[SSAValue, SSAValue] = {}
        self.want: dict[SSAValue, tuple[str, Operation]] = {}

    def find(self, v: SSAValue) -> SSAValue:
        self.parent.setdefault(v, v)
        while self.parent[v] is not v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return
        self.parent[rb] = ra
        if rb in self.want:
            self.demand(ra, *self.want.pop(rb))

    def demand(self, v: SSAValue, kind: str, op: Operation) -> None:
        root = self.find(v)
        have = self.want.get(root)
        if have is not None and have[0] != kind:
            raise LoweringError(f"nvptx: a value is both a {have[0]} and a {kind} tile_mma fragment; copy it into "
                                f"a new value for the second use (not supported yet on NVIDIA targets)", op)
        self.want[root] = (kind, op)


_ELEMENTWISE_PREFIXES = ("arith.", "math.", "xetile.extern_elementwise")


def _is_vec(v: SSAValue) -> bool:
    return isinstance(v.type, VectorType)


def fits(v: SSAValue, kind: str) -> bool:
    """Whether the tile value ``v``'s extents are multiples of a ``kind`` fragment's."""
    (rows, cols), (mr, mc) = v.type.get_shape(), _FRAGMENT_MULTIPLE[kind]
    return rows % mr == 0 and cols % mc == 0


def mma_padding(op: Operation) -> tuple[int, int, int] | None:
    """The (M, K, N) a tile_mma of A [m, k] x B [k, n] is padded to (each up to a multiple
    of m16n8k16's 16, 16 and 8) where some extent is not one, else None.  Such an op's
    operands keep their own layouts (``cols`` / ``rep``); the emitter moves them into
    zero-padded fragments and the result back out (:func:`.warp_ops.relayout`)."""
    (m, k), n = op.a.type.get_shape(), op.b.type.get_shape()[1]
    if m % 16 == 0 and k % 16 == 0 and n % 8 == 0:
        return None
    return -(-m // 16) * 16, -(-k // 16) * 16, -(-n // 8) * 8


def _other_fragment(groups: _Groups, v: SSAValue, kind: str) -> bool:
    """Whether ``v`` already is another kind of fragment (an mma result that is a B
    operand: ``xt.dot_scaled``'s spread codes); the emitter then moves it into ``kind``."""
    want = groups.want.get(groups.find(v))
    return want is not None and want[0] != kind


def _unite(groups: _Groups, op: Operation) -> None:
    name = op.name
    if name == "xetile.tile_mma" and mma_padding(op) is not None:
        # the operands that are whole fragments keep taking them; the others are padded
        if fits(op.b, "mma_b") and not _other_fragment(groups, op.b, "mma_b"):
            groups.demand(op.b, "mma_b", op)
        if fits(op.output, "mma_c"):
            groups.demand(op.output, "mma_c", op)
        if op.c is not None:
            groups.union(op.output, op.c)
    elif name == "xetile.tile_mma":
        if not _other_fragment(groups, op.b, "mma_b"):   # else moved into B's layout by the emitter
            groups.demand(op.b, "mma_b", op)
        groups.demand(op.output, "mma_c", op)
        if op.c is not None:
            groups.union(op.output, op.c)
    elif name.startswith(_ELEMENTWISE_PREFIXES) and name != "arith.constant":
        vecs = [v for v in (*op.operands, *op.results) if _is_vec(v)]
        for v in vecs[1:]:
            if v.type.get_shape() == vecs[0].type.get_shape():
                groups.union(vecs[0], v)
    elif name == "xetile.atomic_rmw" and _is_vec(op.result):   # the old values come in the value's layout
        groups.union(op.value, op.result)
    elif name == "scf.if":     # each result shares its layout with what both regions yield
        for region in op.regions:
            if region.blocks and region.block.last_op is not None:
                for res, out in zip(op.results, region.block.last_op.operands):
                    if _is_vec(res):
                        groups.union(res, out)
    elif name == "scf.for":
        body = op.body.block
        yielded = body.last_op.operands
        for init, arg, res, out in zip(op.iter_args, body.args[1:], op.results, yielded):
            if _is_vec(res):
                for v in (init, arg, out):
                    groups.union(res, v)
    elif name == "scf.while":  # a carried value: its init, both blocks' args, the forwarded and yielded ones
        before, after = op.before_region.block, op.after_region.block
        forwarded, yielded = before.last_op.args, after.last_op.operands
        for init, barg, fwd, aarg, out in zip(op.arguments, before.args, forwarded, after.args, yielded):
            if _is_vec(init):
                for v in (barg, fwd, aarg, out):
                    groups.union(init, v)
        for fwd, res in zip(forwarded, op.results):
            if _is_vec(res):
                groups.union(fwd, res)


def _operand_a(groups: _Groups, op: Operation, c_as_a: set) -> None:
    """A tile_mma's A takes ``mma_a``, unless it is an ``mma_c`` value (then ``c_as_a``)."""
    if op.name != "xetile.tile_mma":
        return
    want = groups.want.get(groups.find(op.a))
    if mma_padding(op) is not None:
        if want is None and fits(op.a, "mma_a"):
            groups.demand(op.a, "mma_a", op)
        return
    if want is not None and want[0] == "mma_c":
        c_as_a.add(op)
    else:
        groups.demand(op.a, "mma_a", op)


def _row_broadcast(groups: _Groups, op: Operation) -> None:
    """A one-row value broadcast along the rows into an ``mma_c`` value, or the column
    reduction of one, takes ``mma_c_row``; a one-column value broadcast along the columns
    into one, or the row reduction of one, ``mma_c_col``."""
    if op.name == "xetile.tile_transpose":
        want = groups.want.get(groups.find(op.source))
        if want is not None and want[0] == "mma_c_col":
            groups.demand(op.result, "mma_c_col_t", op)
        return
    if op.name == "xetile.tile_reduce":
        dims = tuple(op.reduction_dims.get_values())
        want = groups.want.get(groups.find(op.source))
        if want is None or want[0] != "mma_c":
            return
        if dims == (1,) and op.result.type.get_shape()[1] == 1:
            groups.demand(op.result, "mma_c_col", op)
        elif dims == (0,) and op.result.type.get_shape()[0] == 1:
            groups.demand(op.result, "mma_c_row", op)
        return
    if op.name != "xetile.tile_broadcast":
        return
    dims = tuple(op.broadcast_dims.get_values())
    want = groups.want.get(groups.find(op.result))
    if want is not None and want[0] == "mma_b" and dims == (0,) and op.source.type.get_shape()[0] == 1:
        groups.demand(op.source, "mma_b_row", op)
        return
    if want is not None and want[0] == "mma_b" and dims == (1,) and op.source.type.get_shape()[1] == 1:
        groups.demand(op.source, "mma_b_col", op)
        return
    if want is None or want[0] != "mma_c":
        return
    if dims == (0,) and op.source.type.get_shape()[0] == 1:
        groups.demand(op.source, "mma_c_row", op)
    elif dims == (1,) and op.source.type.get_shape()[1] == 1:
        groups.demand(op.source, "mma_c_col", op)


WARPS_ATTR = "nv.warps"


def warp_grid(layouts: dict[SSAValue, Layout], warp_tile: tuple[int, int], max_warps: int,
              exact: int | None = None) -> tuple[int, int]:
    """The warps of one program: 1 x 1 unless every vector value is a tile_mma fragment
    over one C shape [BM, BN] (A values [BM, *], B values [*, BN]); then a grid that gives
    each warp at most ``warp_tile`` of C (halving along the larger side), at most
    ``max_warps`` warps, parts still whole m16n8k16 blocks; ``exact`` (the launch's
    ``num_warps``) asks for that many, past the warp tile (None where the grid cannot
    hold that many).

    >>> warp_grid({}, (64, 64), 8)
    (1, 1)
    """
    kinds = {layout.kind for layout in layouts.values()}
    if layouts and kinds <= {"cols", "rep"} and exact not in (None, 1):
        return _column_grid(layouts, exact)
    c_shapes = {layout.shape for layout in layouts.values() if layout.kind == "mma_c"}
    # [1, 1] values (a whole accumulator's sum) are held by every thread of any grid
    scalars = {"rep"} if all(l.shape == (1, 1) for l in layouts.values() if l.kind == "rep") else set()
    if not layouts or not kinds <= {"mma_a", "mma_b", "mma_c", "mma_c_row", "mma_c_col", "mma_c_col_t", "mma_b_row",
                                        "mma_b_col"} | scalars or \
            not c_shapes:
        return (1, 1) if exact in (None, 1) else None
    if len(c_shapes) > 1 or "mma_c_col" in kinds:
        return _row_grid(layouts, c_shapes, max_warps, exact)
    bm, bn = next(iter(c_shapes))
    if any(l.kind == "mma_a" and l.shape[0] != bm or l.kind in ("mma_b", "mma_c_row", "mma_b_row") and l.shape[1] != bn
           for l in layouts.values()):
        return (1, 1) if exact in (None, 1) else None
    wr = wc = 1
    while wr * wc * 2 <= (max_warps if exact is None else exact):
        grow_rows = (bm // wr > warp_tile[0] or exact) and (bm // (2 * wr)) % 16 == 0
        grow_cols = (bn // wc > warp_tile[1] or exact) and (bn // (2 * wc)) % 8 == 0
        if grow_rows and (not grow_cols or bm // wr >= bn // wc):
            wr *= 2
        elif grow_cols:
            wc *= 2
        else:
            break
    if exact is not None and wr * wc != exact:
        return None
    return wr, wc


def _column_grid(layouts: dict, warps: int) -> tuple[int, int] | None:
    """The warps of a program whose vector values are row tiles (``cols``) and replicated
    values (a whole-row softmax or norm: x [BM, BN], its [BM, 1] statistics): ``1 x
    warps``, each warp a contiguous ``BN / warps`` of every ``cols`` value's columns (row
    reductions then fold across the warps through shared memory,
    :func:`.warp_ops.across_warps`); None where some ``cols`` value's columns do not split
    into parts of a multiple of 32, or the program would pass 32 warps (1024 threads).

    >>> _column_grid({0: Layout("cols", (1, 8192)), 1: Layout("rep", (1, 1))}, 16)
    (1, 16)
    """
    widths = {layout.shape[1] for layout in layouts.values() if layout.kind == "cols"}
    if not widths or warps > 32 or any(w % (warps * WARP) for w in widths):
        return None
    return 1, warps


def _row_grid(layouts: dict, c_shapes: set, max_warps: int, exact: int | None) -> tuple[int, int] | None:
    """The warps of a program whose C tiles have several shapes or per-row statistics (a
    flash attention: S [BM, BN], O [BM, D], the running max [BM, 1]): the rows split, one
    m16 row block a warp (``exact``: that many parts), every warp holding all columns
    (B operands are whole in each warp); 1 x 1 where the row counts differ."""
    rows = {shape[0] for shape in c_shapes}
    rows |= {l.shape[0] for l in layouts.values() if l.kind in ("mma_a", "mma_c_col")}
    if len(rows) != 1:
        return (1, 1) if exact in (None, 1) else None
    bm = rows.pop()
    wr = min(bm // 16, max_warps) if exact is None else exact
    if wr < 1 or bm % (16 * wr):
        return None
    return wr, 1


_PURE_PREFIXES = ("arith.", "math.", "vector.", "xetile.tile_broadcast", "xetile.tile_reduce",
                  "xetile.tile_transpose")


def erase_dead(func: Operation) -> None:
    """Erase the pure ops whose results nothing uses (a mask the kernel built but a
    constexpr branch dropped), so that they neither take a layout nor keep a program
    to one warp."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(func.walk())):
            if op.results and op.name.startswith(_PURE_PREFIXES) and not op.regions and \
                    all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True


def assign(func: Operation, warp_tile: tuple[int, int] = (64, 64), max_warps: int = 1,
           num_warps: int | None = None, grid: tuple[int, int] | None = None) -> dict[SSAValue, Layout]:
    """The layout of every vector value of the subgroup-level kernel ``func``; marks each
    op with its result's layout (``nv.layout``) and, where a program holds several warps
    (:func:`warp_grid`), the function with their grid (``nv.warps = "2x2"``).  ``grid``
    asks for that warp grid (the wgmma GEMM's ``(BM / 16, 1)``) where every vector value
    is a fragment of one C tile; elsewhere :func:`warp_grid` chooses."""
    erase_dead(func)
    groups = _Groups()
    ops = list(func.walk())
    for op in ops:
        _unite(groups, op)
    c_as_a: set = set()
    for op in ops:
        _operand_a(groups, op, c_as_a)
    for op in ops:
        _row_broadcast(groups, op)
    layouts: dict[SSAValue, Layout] = {}
    for op in ops:
        values = [*op.results] + [a for r in op.regions for b in r.blocks for a in b.args]
        for v in values:
            if not _is_vec(v):
                continue
            shape = tuple(v.type.get_shape())
            if len(shape) != 2:
                raise LoweringError(f"nvptx: {len(shape)}-D vector values are not supported (tiles are 2-D)", op)
            want = groups.want.get(groups.find(v))
            if want is None:
                layouts[v] = default_layout(shape)
                continue
            kind, at = want
            mr, mc = _FRAGMENT_MULTIPLE[kind]
            if shape[0] % mr or shape[1] % mc:
                raise LoweringError(f"nvptx: a tile_mma {kind[-1].upper()} operand of shape {list(shape)}: its rows "
                                    f"must be a multiple of {mr} and its columns of {mc} (mma.sync m16n8k16)", at)
            layouts[v] = Layout(kind, shape)
    if grid is None or warp_grid(layouts, warp_tile, grid[0] * grid[1], grid[0] * grid[1]) is None:
        grid = warp_grid(layouts, warp_tile, max_warps, num_warps)
    if grid is None:
        raise LoweringError(f"nvptx: num_warps={num_warps} does not split this kernel's program: several warps a "
                            f"program need every vector value to be a tile_mma fragment of one C tile, split into "
                            f"parts of whole 16x8 blocks, or every vector value a row tile whose columns split into "
                            f"num_warps parts of a multiple of 32 (and narrow or reduced values) (else the program "
                            f"is 1 warp); pass such a count or leave num_warps out", func)
    if grid != (1, 1):
        layouts = {v: Layout(l.kind, l.shape, grid) for v, l in layouts.items()}
        func.attributes[WARPS_ATTR] = StringAttr(f"{grid[0]}x{grid[1]}")
    for op in ops:
        if op.results and op.results[0] in layouts:
            op.attributes[LAYOUT_ATTR] = StringAttr(layouts[op.results[0]].kind)
    return layouts
