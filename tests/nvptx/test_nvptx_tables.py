"""Array tables and ``while`` loops on NVIDIA targets (tutorial 08's grouped GEMM): the
kernel reads each entry's address, rows, columns and row stride from the device table (an
i64 [G, 4] CUDA buffer), tiles the entry through that address (``init_tile`` on an i64
base) and shares out the tiles of all groups in an ``scf.while``.

Offline: the PTX and ptxas's report for sm_90, the device table's rows from (fake) torch
CUDA tensors, the refusals; the kernel's arithmetic in the interpreter against float64.
benchmarks/nv_ops_check.py (``tutorial_08``) runs it on a GPU against torch."""
from __future__ import annotations

import os
import re
import runpy

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import nv_launch
from xetile_dsl.errors import UsageError
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUTORIAL = runpy.run_path(os.path.join(ROOT, "examples", "tutorial_08_grouped_gemm.py"), run_name="tutorial_08")
SIG = {"a": "f16[[:,:]]", "b": "f16[[:,:]]", "c": "f32[[:,:]]", "G": "i32"}


def _specs():
    return {"a": ArgSpec("table", "f16", 2), "b": ArgSpec("table", "f16", 2), "c": ArgSpec("table", "f32", 2),
            "G": ArgSpec("scalar", "i32")}


@pytest.fixture(scope="module")
def grouped():
    from xetile_dsl.nv_compiler import compile_nv
    return compile_nv(TUTORIAL["grouped_matmul"].fn, _specs(), {"BM": 32, "BN": 32, "BK": 32}, SM90, None, None)


def test_grouped_gemm_builds_for_sm90(grouped, tmp_path):
    """At 32 x 32 x 32 tiles (what benchmarks/nv_ops_check.py launches): each table is one
    array parameter (its device table); the kernel reads the entries' i64 fields with
    64-bit global loads, holds the while loop, and multiplies with mma.sync; ptxas sm_90
    assembles it with no spill and no stack frame.  (The tutorial's 16 x 16 x 16 tiles
    spill 8 bytes at 96 registers with the cp.async ring, none at num_stages=1.)"""
    assert grouped.params == [("a", "array"), ("b", "array"), ("c", "array"), ("G", "i32")]
    assert "scf.while" in grouped.asm["nv"]
    ptx = grouped.ptx
    assert re.search(r"ld\.global(?:\.nc)?\.(?:u64|b64)", ptx), "the table's fields are 64-bit global loads"
    assert not re.search(r"ld\.global\.b32", ptx), "no field split into 32-bit halves"
    assert "mma.sync.aligned.m16n8k16" in ptx
    report = ptxas_report(ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


def test_grouped_gemm_in_the_interpreter():
    """The same kernel in the interpreter on groups of ragged shapes (no extent a multiple
    of the 16 x 16 x 16 tiles), against float64: f16 products are exact in f32, so the
    error is the K f32 additions', at most (K + 1) 2^-24 sum |a b| an element."""
    rng = np.random.default_rng(3)
    shapes = [(40, 32, 33), (17, 48, 40), (64, 40, 50)]
    a = [rng.standard_normal((m, k)).astype(np.float16) for m, n, k in shapes]
    b = [rng.standard_normal((k, n)).astype(np.float16) for m, n, k in shapes]
    c = TUTORIAL["grouped_matmul_host"](a, b, target="interpret", programs=3)
    for x, y, z in zip(a, b, c):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        bound = (x.shape[1] + 1) * 2.0 ** -24 * (np.abs(x64) @ np.abs(y64))
        assert np.all(np.abs(z - x64 @ y64) <= bound)


class _FakeCudaTensor:
    """What a table reads of a torch CUDA tensor (no GPU here): device, dtype, shape,
    ``stride()`` and ``data_ptr()``; a module name that marks it as torch's."""

    __module__ = "torch.fake_cuda"

    def __init__(self, shape, stride, data_ptr, dtype="torch.float16", device="cuda:0"):
        self.device = type("device", (), {"type": "cuda", "name": device, "__eq__": lambda s, o: s.name == o.name,
                                          "__str__": lambda s: s.name})()
        self.shape, self._stride, self._ptr, self.dtype = shape, stride, data_ptr, dtype

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr


def test_cuda_entries_list_their_pointers_in_place():
    """Torch CUDA tensors are listed in place: the rows hold each data_ptr(), extents and
    row stride (a view's pitch; no 2D-block alignment or narrow-row rule on NVIDIA, whose
    kernels read entries per lane); the launch's spec is a table of the entries' dtype."""
    from xetile_dsl.runtime.array_tables import cuda_table_rows
    tab = xd.array_table([_FakeCudaTensor((40, 32), (32, 1), 0x10002), _FakeCudaTensor((3, 4), (100, 1), 0x20000)])
    assert tab.on_cuda and tab.dtype == np.float16
    assert cuda_table_rows(tab) == [(0x10002, 40, 32, 32), (0x20000, 3, 4, 100)]
    assert nv_launch._spec("a", tab) == ArgSpec("table", "f16", 2)
    from xetile_dsl.jit import _on_cuda
    assert _on_cuda((tab, 2), {}) and not _on_cuda((xd.array_table([np.zeros((4, 32), np.float16)]),), {})
    # a launch with a table never re-sends an earlier launch's parameters: its device table
    # is a new buffer each launch
    assert nv_launch._token((1,), "sm90", (tab, 2), {}) is None
    assert nv_launch._token((1,), "sm90", (2,), {"a": tab}) is None


def test_cuda_table_refusals():
    """Refused before anything compiles, naming the entry: a column-strided view, rows
    that overlap, tensors on two GPUs, numpy entries for an NVIDIA launch, numpy and CUDA
    entries mixed."""
    from xetile_dsl.runtime.array_tables import cuda_table_rows
    with pytest.raises(UsageError, match="entry 0: strides .* unit stride along a row"):
        xd.array_table([_FakeCudaTensor((40, 32), (1, 40), 0x10000)])
    with pytest.raises(UsageError, match="entry 1: row stride 16 for rows of 32 elements"):
        xd.array_table([_FakeCudaTensor((4, 32), (32, 1), 0x10000), _FakeCudaTensor((4, 32), (16, 1), 0x10000)])
    two = xd.array_table([_FakeCudaTensor((4, 32), (32, 1), 0x10000),
                          _FakeCudaTensor((4, 32), (32, 1), 0x20000, device="cuda:1")])
    with pytest.raises(UsageError, match="entry 1: on cuda:1, but entry 0 is on cuda:0"):
        cuda_table_rows(two)
    with pytest.raises(UsageError, match="list torch CUDA tensors .* holds numpy arrays"):
        nv_launch._spec("a", xd.array_table([np.zeros((4, 32), np.float16)]))
    with pytest.raises(UsageError, match="entry 1: a numpy array, but entry 0 is a device array"):
        xd.array_table([_FakeCudaTensor((4, 32), (32, 1), 0x10000), np.zeros((4, 32), np.float16)])


@xd.jit
def _while_sum(x, y, n, BN: xt.constexpr):
    """y[0, :BN] = the sum of x's rows 0, 2, 4, ... below n (a while loop carrying a tile)."""
    r = 0
    acc = xt.zeros([1, BN], xt.float32)
    while r < n:
        acc = acc + xt.load_tile(xt.init_tile(x, [r, 0], [1, BN]))
        r = r + 2
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [1, BN]))


def test_while_carrying_a_tile(tmp_path):
    """A while loop that carries a tile value and a scalar: one phi per slot and the
    counter in its header; in the interpreter the sum against numpy (exact: small
    integers); for sm90 ptxas without spill."""
    x = np.arange(7 * 64, dtype=np.float32).reshape(7, 64) % 13
    y = np.zeros((1, 64), np.float32)
    _while_sum.on("interpret")[(1,)](x, y, 7, BN=64)
    assert (y[0] == x[0::2].sum(0)).all()
    k = xd.compile(_while_sum, {"x": "f32[:,:]", "y": "f32[:,:]", "n": "i32"}, {"BN": 64}, target="sm90")
    assert "scf.while" in k.asm["nv"]
    report = ptxas_report(k.ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
