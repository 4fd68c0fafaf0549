"""print() in interpreted kernels; tile_mma numerics (int8, tf32); workgroup-level IR;
scf.if / scf.while; errors at the user's line."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.interpreter import InterpreterError
from xetile_dsl.interpreter.values import round_tf32

from .mlir import kernel, run, tile


@xd.jit
def show(x, n, BM: xt.constexpr):
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BM]))
    print("pid", pid, "n =", n, v)
    print(f"block {pid}: {v:.1f}", end="|\n")


def test_print_of_scalars_and_tiles_in_the_interpreter(capsys):
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    show.on("interpret")[(2,)](x, 7, BM=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "pid 0 n = 7 [[0. 1.]"
    assert out[1] == " [2. 3.]]"
    assert out[2] == "block 0: [[0.0 1.0]"
    assert out[3] == " [2.0 3.0]]|"
    assert out[4] == "pid 1 n = 7 [[4. 5.]"


def test_print_is_rejected_by_the_compiler_at_its_line():
    with pytest.raises(CompilationError, match="XETILE_INTERPRET=1") as info:
        xd.compile(show, signature={"x": "f32[:,:]", "n": "i32"}, constants={"BM": 8}, target="cpu")
    assert info.value.line == show.fn.__code__.co_firstlineno + 4  # decorator, def, pid, v, print


def test_compile_for_interpret_gives_the_xetile_ir():
    k = xd.compile(show, signature={"x": "f32[:,:]", "n": "i32"}, constants={"BM": 8}, target="interpret")
    assert "xtdebug.print" in k.asm["xetile"] and "xegpu" not in k.asm


def mma_kernel(ea: str, eacc: str, m=8, n=16, k=32) -> str:
    return kernel({"a": ea, "b": ea, "c": eacc}, f"""
  %ta = {tile("a", ea, f"{m}x{k}")}
  %tb = {tile("b", ea, f"{k}x{n}")}
  %va = xetile.load_tile %ta : !xetile.tile<{m}x{k}x{ea}> -> vector<{m}x{k}x{ea}>
  %vb = xetile.load_tile %tb : !xetile.tile<{k}x{n}x{ea}> -> vector<{k}x{n}x{ea}>
  %tc = {tile("c", eacc, f"{m}x{n}")}
  %vc = xetile.load_tile %tc : !xetile.tile<{m}x{n}x{eacc}> -> vector<{m}x{n}x{eacc}>
  %d = xetile.tile_mma %va, %vb, %vc : vector<{m}x{k}x{ea}>, vector<{k}x{n}x{ea}>, vector<{m}x{n}x{eacc}> -> vector<{m}x{n}x{eacc}>
  xetile.store_tile %d, %tc : vector<{m}x{n}x{eacc}>, !xetile.tile<{m}x{n}x{eacc}>""")


def test_int8_mma_accumulates_in_int32_and_wraps():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (8, 32)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    c = np.full((8, 16), 2**31 - 100, np.int32)
    want = (a.astype(np.int64) @ b.astype(np.int64) + c).astype(np.int32)  # wraps mod 2^32
    run(mma_kernel("i8", "i32"), (1,), a, b, c)
    np.testing.assert_array_equal(c, want)


def test_f32_mma_rounds_inputs_to_tf32():
    a = np.full((8, 32), 1 + 2.0**-12, np.float32)   # below tf32's 10-bit mantissa: rounds to 1
    b = np.full((32, 16), 1 + 3 * 2.0**-11, np.float32)   # rounds (to even) to 1 + 2^-9
    c = np.zeros((8, 16), np.float32)
    run(mma_kernel("f32", "f32"), (1,), a, b, c)
    assert round_tf32(np.float32(1 + 2.0**-12)) == 1 and round_tf32(np.float32(1 + 3 * 2.0**-11)) == 1 + 2.0**-9
    np.testing.assert_array_equal(c, np.float32(32 * (1 + 2.0**-9)))


def test_workgroup_level_kernel_runs_on_whole_workgroup_tiles():
    """A 64x64 workgroup tile with wg_map over 2x2 subgroups: C = A @ B + rowsum(A)."""
    wa = "#xetile.wg_map<sg_layout = [2, 2], sg_data = [32, 32]>"
    tattr = f"#xetile.tile_attr<wg_map = {wa}>"
    body = f"""
  %ta = {tile("a", "f16", "64x64", attr=tattr)}
  %tb = {tile("b", "f16", "64x64", attr=tattr)}
  %va = xetile.load_tile %ta : !xetile.tile<64x64xf16, {tattr}> -> vector<64x64xf16>
  %vb = xetile.load_tile %tb : !xetile.tile<64x64xf16, {tattr}> -> vector<64x64xf16>
  %d = xetile.tile_mma %va, %vb {{wg_map = {wa}}} : vector<64x64xf16>, vector<64x64xf16> -> vector<64x64xf32>
  %n = "gpu.num_subgroups"() : () -> index
  %nf = arith.index_cast %n : index to i32
  %ff = arith.sitofp %nf : i32 to f32
  %s = vector.broadcast %ff : f32 to vector<64x64xf32>
  %e = arith.addf %d, %s : vector<64x64xf32>
  %tc = {tile("c", "f32", "64x64", attr=tattr)}
  xetile.store_tile %e, %tc : vector<64x64xf32>, !xetile.tile<64x64xf32, {tattr}>"""
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    run(kernel({"a": "f16", "b": "f16", "c": "f32"}, body), (1,), a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32) + 4)


def test_scf_if_and_while():
    """while (v < limit) v = v * 2; then if (v > 100) store v else store -v."""
    text = kernel({"y": "i32", "lim": "=i32"}, f"""
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %hundred = arith.constant 100 : i32
  %v = scf.while (%x = %one) : (i32) -> i32 {{
    %go = arith.cmpi slt, %x, %lim : i32
    scf.condition(%go) %x : i32
  }} do {{
  ^bb0(%x2: i32):
    %d = arith.muli %x2, %two : i32
    scf.yield %d : i32
  }}
  %big = arith.cmpi sgt, %v, %hundred : i32
  %r = scf.if %big -> (i32) {{
    scf.yield %v : i32
  }} else {{
    %zero = arith.constant 0 : i32
    %neg = arith.subi %zero, %v : i32
    scf.yield %neg : i32
  }}
  %vec = vector.broadcast %r : i32 to vector<1x16xi32>
  %t = {tile("y", "i32", "1x16")}
  xetile.store_tile %vec, %t : vector<1x16xi32>, !xetile.tile<1x16xi32>""")
    y = np.zeros((1, 16), np.int32)
    run(text, (1,), y, 200)
    assert (y == 256).all()
    run(text, (1,), y, 20)
    assert (y == -32).all()


@xd.jit
def divide(x, n, d, BM: xt.constexpr):
    t = xt.init_tile(x, [n // d, 0], [BM, BM])
    xt.store_tile(xt.zeros([BM, BM], xt.float32), t)


@xd.jit
def to_int(x, y, BM: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BM]))
    xt.store_tile(xt.astype(v, xt.int32), xt.init_tile(y, [0, 0], [BM, BM]))


@xd.jit
def oob(x, BM: xt.constexpr):
    t = xt.init_tile(x, [0, 0], [BM, BM])
    v = xt.load_tile(t)
    xt.store_tile(v, t)


def test_interpreter_errors_name_the_users_line():
    with pytest.raises(InterpreterError, match="not implemented|does not implement") as info:
        from xetile_dsl.dialects import parse_module
        from xetile_dsl.interpreter import interpret

        interpret(parse_module(kernel({"y": "f32"}, '  %s = "gpu.lane_id"() : () -> index')), (1,), [np.zeros((1, 1), np.float32)])
    assert "gpu.lane_id" in str(info.value)
    x = np.full((4, 4), np.inf, np.float32)
    with pytest.raises(InterpreterError, match="inf/NaN") as info:
        to_int.on("interpret")[(1,)](x, np.zeros((4, 4), np.int32), BM=4)
    assert f"test_print_and_ir.py:{to_int.fn.__code__.co_firstlineno + 3}:" in str(info.value)
    divide.on("interpret")[(1,)](x, 4, 0, BM=4)  # n // 0 is 0 (docs/decisions/019-arithmetic-semantics.md)
    np.testing.assert_array_equal(x, 0)
    oob.on("interpret")[(1,)](x, BM=8)  # out-of-bounds parts of the tile are fine: padding / dropped
