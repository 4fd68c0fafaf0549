"""Unbounded compile work is refused with a located error instead of compiling forever
and xegpu-sink-to-uses stays linear in the ops of a block.

* ``static_range`` unrolling is capped by ``MAX_UNROLLED_OPS`` (ops produced, not just
  iterations), reported at the ``static_range`` call with a hint to use ``range``;
* a per-subgroup tile value beyond ``Target.max_subgroup_tile_bytes`` (register files of
  the target, 128 KiB: a 512x512 f16 copy took 100+ s in the SPIR-V backend and the OpenCL
  runtime) is reported at the op making it, with the wg_map / loop hint, before blocking
  and code generation; 256x256 f16 still compiles and is exact;
* the work xegpu-sink-to-uses does on a blocked copy with four times the ops is about
  four times as much (343 -> 1447 checks; before, walking forward from every load:
  4943 -> 84287, 17 times)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import CompilationError
from xetile_dsl.dialects import make_context
from xetile_dsl.frontend.build import build_module
from xetile_dsl.frontend.ast_to_xetile import ArgSpec
from xetile_dsl.frontend.control import MAX_UNROLLED_OPS
from xetile_dsl.lowering.passes import sink_to_uses
from xetile_dsl.lowering.pipeline import stages
from xetile_dsl.targets import get_target

F32_2D = {"x": "f32[:,:]", "y": "f32[:,:]"}


@xd.jit
def huge_static_range(x, y):
    """A hundred million unrolled iterations (a typo for ``range``)."""
    acc = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    for i in xt.static_range(10**8):  # LIMIT: trips
        acc = acc + 1.0
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def wide_static_body(x, y, N: xt.constexpr):
    """Few iterations (under the limit by count) whose bodies add up to too many ops."""
    acc = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    for i in xt.static_range(N):  # LIMIT: ops
        acc = acc * 0.5 + xt.exp(acc) - xt.sqrt(acc) + 1.0
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def copy_tile(a, b, N: xt.constexpr):
    """One subgroup copies an N x N tile through registers."""
    t = xt.load_tile(xt.init_tile(a, [0, 0], [N, N]))  # LIMIT: tile
    xt.store_tile(t, xt.init_tile(b, [0, 0], [N, N]))


def _line(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, text in enumerate(lines) if f"# LIMIT: {marker}" in text)


def _compile_error(fn, sig, consts, marker, target="cpu") -> str:
    with pytest.raises(CompilationError) as info:
        xd.compile(fn, sig, consts, target=target)
    text = str(info.value)
    assert f"test_compile_limits.py:{_line(fn, marker)}:" in text, text
    return text


def test_static_range_trip_count_over_the_limit():
    text = _compile_error(huge_static_range, F32_2D, {}, "trips")
    assert f"more than {MAX_UNROLLED_OPS} ops" in text and "100000000 iterations" in text, text
    assert "`range(100000000)` for a real loop" in text, text


def test_static_range_ops_over_the_limit():
    """Each iteration makes several ops: the limit counts ops, long before the trip count."""
    trips = MAX_UNROLLED_OPS // 2
    text = _compile_error(wide_static_body, F32_2D, {"N": trips}, "ops")
    assert f"more than {MAX_UNROLLED_OPS} ops" in text and f"of {trips} iterations" in text, text
    assert f"`range({trips})`" in text, text


def test_static_range_under_the_limit_still_unrolls():
    kernel = xd.compile(wide_static_body, F32_2D, {"N": 3}, target="interpret")
    assert kernel.asm["xetile"].count("math.exp") == 3


@pytest.mark.parametrize("target", ["cpu", "pvc", "cpu-arc"])
def test_subgroup_tile_far_beyond_the_register_file(target):
    """A 1024x1024 f16 tile in one subgroup (2 MiB, 128 register files on pvc) is refused
    before blocking, where it would take minutes; the message names the limit and what to do."""
    gpu = xd.compiler.compile_target(target).gpu
    text = _compile_error(copy_tile, {"a": "f16[:,:]", "b": "f16[:,:]"}, {"N": 1024}, "tile", target=target)
    assert "1024x1024xf16" in text and f"{2 * 1024 * 1024} bytes" in text, text
    assert f"{gpu.max_subgroup_tile_bytes()} bytes" in text, text
    assert "wg_map" in text and "range" in text, text


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_subgroup_tile_512_refused_before_codegen(target, monkeypatch):
    """A 512x512 f16 tile (512 KiB) in one subgroup is refused at the user's line by
    wg-to-sg: neither blocking nor the SPIR-V backend ever runs."""
    from xetile_dsl.codegen.spirv import translate as spirv_emit
    from xetile_dsl.lowering.passes import blocking
    reached = []
    monkeypatch.setattr(blocking.XeTileBlocking, "apply", lambda *a: reached.append("blocking"))
    monkeypatch.setattr(spirv_emit, "emit_spirv", lambda *a, **k: reached.append("spirv"))
    gpu = xd.compiler.compile_target(target).gpu
    text = _compile_error(copy_tile, {"a": "f16[:,:]", "b": "f16[:,:]"}, {"N": 512}, "tile", target=target)
    assert "512x512xf16" in text and f"{512 * 512 * 2} bytes" in text, text
    assert f"limited to {gpu.max_subgroup_tile_bytes()} bytes" in text and "wg_map" in text and "range" in text, text
    assert reached == []


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_subgroup_tile_256_compiles_and_is_exact(target):
    """256x256 f16 (128 KiB: the limit on pvc and arc) stays legal."""
    n = 256
    assert 2 * n * n <= xd.compiler.compile_target(target).gpu.max_subgroup_tile_bytes()
    a = (np.arange(n * n) % 2039 - 1000).astype(np.float16).reshape(n, n)
    b = np.zeros_like(a)
    copy_tile.on(target)[(1,)](a, b, N=n)
    np.testing.assert_array_equal(b, a)


def _xegpu_before_sinking(n: int, target: str = "pvc"):
    """The copy kernel's module after every xegpu-stage pass but xegpu-sink-to-uses."""
    module, _ = build_module(copy_tile.fn, {"a": ArgSpec("array", "f16", 2), "b": ArgSpec("array", "f16", 2)},
                             {"N": n}, get_target(target))
    ctx = make_context()
    (_, passes), *_ = stages(target)
    assert isinstance(passes[-1], sink_to_uses.SinkToUses)
    for p in passes[:-1]:
        p.apply(ctx, module)
    return module


def _sink_work(module, monkeypatch) -> int:
    """How many times xegpu-sink-to-uses asks whether an op writes memory (the forward
    walk of a load asked once per op it passed)."""
    calls = [0]
    real = sink_to_uses._writes_memory

    def counting(op):
        calls[0] += 1
        return real(op)

    monkeypatch.setattr(sink_to_uses, "_writes_memory", counting)
    sink_to_uses.SinkToUses().apply(make_context(), module)
    return calls[0]


def test_sink_to_uses_work_is_linear_in_the_block(monkeypatch):
    """64x64 and 128x128 copies: four times the ops, at most ~four times the work."""
    small, large = _xegpu_before_sinking(64), _xegpu_before_sinking(128)
    ops_small = sum(1 for _ in small.walk())
    ops_large = sum(1 for _ in large.walk())
    assert 3.5 <= ops_large / ops_small <= 4.5     # N x N tiles: four times the blocks
    work_small, work_large = _sink_work(small, monkeypatch), _sink_work(large, monkeypatch)
    assert work_large <= 1.25 * (ops_large / ops_small) * work_small, (work_small, work_large)
