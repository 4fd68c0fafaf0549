"""ops.matmul's host path on torch CUDA tensors without a GPU (the driver and the tensor
map encoder replaced): a call laid out as an earlier one re-sends that launch through
``nv_launch.Relaunch`` -- the arrays' new addresses written into its parameters and the
tensor maps of the arrays that moved made again -- and sends what the full path would."""
from __future__ import annotations

import ctypes

import pytest

from .test_nvptx_rows import _CudaTensorLike


@pytest.fixture
def gemm_driver(monkeypatch):
    """Launches recorded as (grid, threads, parameter values; a tensor map as its bytes);
    a map's bytes are its fields' address, dims and box."""
    pytest.importorskip("torch")
    from xetile_dsl import nv_launch
    import importlib
    matmul = importlib.import_module("xetile_dsl.ops.matmul")
    from xetile_dsl.runtime import backend_cuda, tensor_maps
    launched = []
    for module, table in ((nv_launch, "_SEEN"), (nv_launch, "_LAST"), (matmul, "_PLANS")):
        monkeypatch.setattr(module, table, {})
    monkeypatch.setattr(backend_cuda, "load_function", lambda *a, **k: "fn")
    monkeypatch.setattr(backend_cuda, "_CAPABILITY", {0: (9, 0)})

    def encode(fields, dtype):
        words = (fields.address, *fields.dims, *fields.box)
        return (ctypes.c_uint8 * 128).from_buffer_copy(b"".join(w.to_bytes(8, "little") for w in words).ljust(128))
    monkeypatch.setattr(tensor_maps, "encode", encode)
    import torch
    from xetile_dsl.ops import operands
    monkeypatch.setattr(matmul, "_NO_BIAS", {})     # the placeholder bias row: a fake array too
    monkeypatch.setattr(operands, "_torch_empty", lambda like, shape, dtype: _CudaTensorLike(
        9 << 20, shape, getattr(torch, str(dtype))))
    monkeypatch.setattr(backend_cuda, "launch_packed", lambda fn, grid, threads, packed, **k: launched.append(
        (grid, threads, [bytes(o) if isinstance(o, ctypes.Array) else o.value for o in packed.objects])))
    return launched


def _maps(params) -> list[int]:
    """The addresses the launch's tensor maps hold."""
    return [int.from_bytes(p[:8], "little") for p in params if isinstance(p, bytes)]


def test_matmul_replays_a_layout_with_its_tensor_maps(gemm_driver, monkeypatch):
    """The sm90 GEMM's launch (TMA maps of A, B and C): a call on arrays at new addresses
    binds nothing, and its parameters and maps hold the new addresses, as the full path's
    on the same arrays do; an A off the 16-byte alignment is not replayed (its map could
    not describe it) and takes the full path."""
    from xetile_dsl import nv_launch, ops
    import importlib
    matmul = importlib.import_module("xetile_dsl.ops.matmul")
    launched = gemm_driver
    bound = []
    real = nv_launch.kernel_for
    monkeypatch.setattr(nv_launch, "kernel_for", lambda *a: bound.append(1) or real(*a))
    a, b, c = (_CudaTensorLike(p << 20, (4096, 4096)) for p in (1, 2, 3))
    assert ops.matmul(a, b, out=c) is c
    full = launched[-1]
    assert full[0] == (32, 16, 1) and full[1] == 256 and len(bound) == 1
    assert sorted(_maps(full[2])) == [1 << 20, 2 << 20, 3 << 20]  # A's, B's and C's maps (TMA)
    a2, b2, c2 = (_CudaTensorLike(p << 20, (4096, 4096)) for p in (4, 5, 6))
    assert ops.matmul(a2, b, out=c2) is c2 and len(bound) == 1     # replayed: no binding
    moved = launched[-1]
    assert sorted(_maps(moved[2])) == [2 << 20, 4 << 20, 6 << 20] and moved[2][0] == 4 << 20
    ops.matmul(a2, b2, out=c2)
    replayed = launched[-1]
    matmul._PLANS.clear()
    nv_launch._LAST.clear()
    ops.matmul(a2, b2, out=c2)                                     # the full path, same arrays
    assert launched[-1] == replayed and len(bound) == 1            # (the kernel: from _SEEN)
    assert sorted(_maps(replayed[2])) == [4 << 20, 5 << 20, 6 << 20] and 6 << 20 in replayed[2]
    # an address off TMA's 16-byte alignment: the replay refuses, the full path decides
    a3 = _CudaTensorLike((7 << 20) + 8, (4096, 4096))
    count = len(launched)
    ops.matmul(a3, b2, out=c2)
    assert len(launched) == count + 1 and launched[-1][2][0] == (7 << 20) + 8
    assert (7 << 20) + 8 not in _maps(launched[-1][2])             # (not a TMA map of A there)
