"""The per-subgroup interpreter executes XeGPU named barriers with their own semantics
(a barrier completes when its participants have arrived and releases only them), so it
is the reference for the named barriers xetile-wg-to-sg generates: without them, or
with ids that group the subgroups differently from the data they exchange, a subgroup
reads partials its partners have not stored yet.

The kernel is gemm_rowsum_kernel ([2, 2] subgroups, 64x64 tiles): subgroup (i, j) stores
the row sums of its 32x32 C piece as column j of a 64x2 SLM buffer; subgroup s then adds
both columns of rows 16 s .. 16 s + 15.  Subgroups 0, 1 (rows 0..31) and 2, 3 (rows
32..63) are the two groups.  Subgroups run in id order between barriers, so a reader
whose partner has a higher id sees 0 in the partner's column: its rows get only the sum
of the left 32 columns of C."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl.interpreter import InterpreterError
from xetile_dsl.interpreter import launch as launch_mod
from xetile_dsl.kernels import workgroup_slm as W
from xetile_dsl.lowering.analysis import sg_groups
from xetile_dsl.lowering.analysis.sg_groups import Groups

M, N, K = 128, 128, 64


def _run():
    rng = np.random.default_rng(11)
    a = rng.integers(-2, 3, (M, K)).astype(np.float16)
    b = rng.integers(-2, 3, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    rowsum = np.zeros((M, 16), np.float32)
    W.gemm_rowsum_kernel.on("interpret-subgroups")[(2, 2)](a, b, c, rowsum, K, BK=32)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    return rowsum[:, :2], ref


def _expected(ref: np.ndarray, stale_bands: list[int]) -> np.ndarray:
    """Row sums per workgroup column; the 16-row bands ``stale_bands`` of every 64-row tile
    hold only the left half's sum (the partner's partial column was still 0)."""
    tiles = ref.reshape(M, 2, 64)
    full, left = tiles.sum(2), tiles[:, :, :32].sum(2)
    band = (np.arange(M) % 64) // 16
    return np.where(np.isin(band, stale_bands)[:, None], left, full)


def test_generated_named_barriers_order_the_exchange():
    got, ref = _run()
    np.testing.assert_array_equal(got, _expected(ref, []))


def test_without_the_named_barriers_the_lower_partner_reads_stale_partials(monkeypatch):
    real = launch_mod.subgroup_program

    def without_named_barriers(module, fn, flavour):
        module, fn = real(module, fn, flavour)
        ops = [op for op in fn.walk() if op.name in ("xegpu.nbarrier_arrive", "xegpu.nbarrier_wait")]
        assert len(ops) == 2 and not [op for op in fn.walk() if op.name == "gpu.barrier"]
        for op in ops:
            op.detach()
            op.erase()
        return module, fn

    monkeypatch.setattr(launch_mod, "subgroup_program", without_named_barriers)
    got, ref = _run()
    # subgroup 0 reads before subgroup 1 stored, subgroup 2 before subgroup 3
    np.testing.assert_array_equal(got, _expected(ref, [0, 2]))


def test_mis_numbered_named_barriers_release_a_subgroup_too_early(monkeypatch):
    """Ids sg mod 2 (groups {0, 2} and {1, 3}) instead of sg / 2: subgroup 2 completes
    barrier 1 with subgroup 0 and reads before its partner 3 stored."""
    monkeypatch.setattr(sg_groups, "exchange_groups", lambda *args: Groups(step=1, count=2, size=2))
    got, ref = _run()
    np.testing.assert_array_equal(got, _expected(ref, [2]))


def test_a_named_barrier_that_cannot_complete_is_reported(monkeypatch):
    """Three participants announced for groups of two: every subgroup ends up waiting."""
    monkeypatch.setattr(sg_groups, "exchange_groups", lambda *args: Groups(step=2, count=2, size=3))
    with pytest.raises(InterpreterError, match=r"named barrier 1 needs 3 participants but only subgroup\(s\) "
                                               r"\[0, 1\] arrived"):
        _run()
