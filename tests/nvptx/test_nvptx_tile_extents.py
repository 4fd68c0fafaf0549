"""The extents an NVIDIA tile is bounded by: an ``init_tile``'s sizes where they differ
from its array's (a row edge clamped by frontend/edge_masks.py), read in the tile's own
order.  An ``order=(0, 1)`` tile's sizes are its view's, [memory columns, memory rows]:
taken as [rows, columns] they bounded Q^T, K^T and V^T by each other's extents (on an
H200 every f16/bf16 attention, its backward and decode_attention gave wrong values at
N = 200, D = 64: relative errors 0.27 to 0.69, no error raised).  Before the emitter
read a tile's sizes at all, a row edge store mask (decode_attention's o: the group's
heads) was dropped on NVIDIA targets: programs wrote each other's rows.

Offline: each ``init_tile`` the sm90 emitter lowers is watched, and the tile's bounds are
checked against its array's parameters (the same LLVM values, or a clamp of the rows the
mask keeps)."""
from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import MemRefType

from xetile_dsl.codegen.nvptx import emit


def _watched(monkeypatch) -> list:
    seen = []
    lower = emit._HANDLERS["xetile.init_tile"]

    def watch(self, op):
        lower(self, op)
        source, tile = self.values.get(op.source), self.values.get(op.tile)
        if isinstance(op.source.type, MemRefType) and isinstance(tile, emit.Tile):
            seen.append((source, tile, len(op.sizes)))
    monkeypatch.setitem(emit._HANDLERS, "xetile.init_tile", watch)
    return seen


def _check(seen: list) -> tuple[int, int]:
    """(transposed tiles, tiles) whose bounds were checked: the columns are always the
    array's; the rows the array's or a clamp of them (never the array's columns)."""
    transposed = 0
    for source, tile, _ in seen:
        assert tile.mem.ptr is source.ptr and tile.mem.stride is source.stride
        assert tile.mem.cols is source.cols, "a tile bounded by other columns than its array's"
        assert tile.mem.rows is source.rows or tile.mem.rows is not source.cols
        transposed += tile.transposed
    return transposed, len(seen)


@pytest.mark.parametrize("dtype", [np.float16, "bf16"])
def test_attention_tiles_keep_their_arrays_extents(nv_coverage, monkeypatch, dtype):
    from xetile_dsl import ops
    import ml_dtypes
    dt = ml_dtypes.bfloat16 if dtype == "bf16" else dtype
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 4, 200, 64)).astype(dt)
    kv = rng.standard_normal((1, 2, 200, 64)).astype(dt)
    seen = _watched(monkeypatch)
    ops.attention(q, kv, kv, causal=True, return_lse=True, target="sm90")
    transposed, total = _check(seen)
    assert transposed >= 1 and total > transposed
    # the whole (unclamped) transposed tiles are bounded by exactly their array's extents
    assert any(t.transposed and t.mem.rows is s.rows and t.mem.cols is s.cols for s, t, _ in seen)


def test_decode_and_varlen_tiles_keep_their_arrays_extents(nv_coverage, monkeypatch):
    from xetile_dsl import ops
    rng = np.random.default_rng(1)
    seen = _watched(monkeypatch)
    ops.decode_attention(rng.standard_normal((2, 4, 64)).astype(np.float16),
                         rng.standard_normal((6, 16, 2, 64)).astype(np.float16),
                         rng.standard_normal((6, 16, 2, 64)).astype(np.float16),
                         np.arange(6, dtype=np.int32).reshape(2, 3), np.array([40, 17], np.int32), target="sm90")
    decode_transposed, _ = _check(seen)
    assert decode_transposed >= 1                        # K^T of a cache block
    # o's store keeps the group's heads only (a row edge mask: rows < G - head): a tile
    # with fewer rows than o[b], so no program writes another group's heads (before the
    # emitter read a tile's sizes, those writes raced on the H200: some runs wrong)
    assert any(not t.transposed and t.mem.rows is not s.rows for s, t, _ in seen)
    seen.clear()
    packed = rng.standard_normal((13, 2, 64)).astype(np.float16)
    ops.attention(packed, packed, packed, causal=True, cu_seqlens=np.array([0, 5, 13], np.int32), target="sm90")
    transposed, _ = _check(seen)
    assert transposed >= 1
    # the varlen stores of o and lse clamp their rows to the sequence's end, nothing else
    assert any(t.mem.rows is not s.rows for s, t, _ in seen)


def test_every_ops_tile_is_bounded_by_its_array(nv_coverage, monkeypatch):
    """The same check over every op of scripts/nv_coverage.py's list on sm90 (the attention
    backward kernels left out: about 30 s a kernel here; their tiles are those of the
    forward's forms) and the tutorials' kernels."""
    seen = _watched(monkeypatch)
    cases = [(n, t) for n, t in nv_coverage.op_cases() if not n.startswith("attention_backward")]
    cases += [(n, t) for n, t in nv_coverage.example_cases() if "tutorial" in n]
    checked = 0
    for name, thunk in cases:
        seen.clear()
        try:
            thunk()
        except AssertionError:      # an example's own host checks (nothing ran: outputs are empty)
            pass
        _check(seen)
        checked += len(seen)
    assert checked > 300
