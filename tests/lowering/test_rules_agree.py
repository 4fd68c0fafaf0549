"""The lowering rules' MLIR inputs (tests/lowering/test_lowering_rules.py and
test_wg_slm_rules.py) run three ways with random inputs and must agree: compiled by
``xetile_dsl.compile_mlir`` on the OpenCL CPU device ("cpu-pvc", and "cpu-arc" where the
rule is legal there), in the interpreter on whole workgroup tiles, and in the interpreter
per subgroup (after the compiler's own xetile-wg-to-sg).  Inputs the compiler rejects
must be rejected with the same message by the per-subgroup interpreter."""
from __future__ import annotations

import re
import zlib

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.dialects import parse_module
from xetile_dsl.errors import LoweringError
from xetile_dsl.interpreter import interpret
from tests.lowering import test_lowering_rules as rules
from tests.lowering import test_wg_slm_rules as slm_rules
from tests.lowering.test_lowering_rules import mma_kernel, tile, wg

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8, "ui8": np.uint8,
          "i32": np.int32}


def _random(rng, shape, elem):
    dtype = DTYPES[elem]
    if elem in ("i8", "ui8"):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, shape).astype(dtype)  # full range: i32 sums are exact
    return rng.standard_normal(shape).astype(dtype)


def _three_ways(text: str, target: str, args: list, grid=(1,)) -> tuple[list, list, list]:
    """(compiled, whole-tile, per-subgroup) copies of ``args`` after each run."""
    runs = [[x.copy() if isinstance(x, np.ndarray) else x for x in args] for _ in range(3)]
    xd.compile_mlir(text, target).launch(grid, runs[0])
    interpret(parse_module(text), grid, runs[1], subgroups=False)
    interpret(parse_module(text), grid, runs[2], subgroups=True)
    return tuple(runs)


def _assert_close(actual, expected, exact: bool, what: str, atol: float = 5e-3):
    """Integer results exactly; float results up to the accumulation order (the device
    sums K = 1024 products in f32, the interpreter in f64 rounded once)."""
    if exact:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                                   rtol=1e-4, atol=atol, err_msg=what)


# --- tile_mma kernels: xetile-wg-to-sg, blocking, XeGPU and SIMT rule inputs -------------
# (test_wg_to_sg_leaves_subgroup_kernels_alone's input is the blocking f16 kernel with K
# steps of 32 instead of 64, and the round-robin rule is target-independent: both left
# out to keep the CPU device's kernel builds to a few minutes.)
MMA_CASES = [
    pytest.param(*rules.APPENDIX_2_1[:3], "f16", "f32", rules.APPENDIX_2_1[3], "cpu-pvc", id="wg-appendix-2.1-pvc"),
    pytest.param(*rules.ROUND_ROBIN[:3], "f16", "f32", rules.ROUND_ROBIN[3], "cpu-pvc", id="wg-round-robin-pvc"),
] + [pytest.param(32, 32, 64, elem, acc, None, f"cpu-{target}", id=f"blocking-{elem}-{target}")
     for target, elem, acc, _, _ in rules.BLOCKING_CASES]


@pytest.mark.parametrize("m,n,k,elem,acc,maps,target", MMA_CASES)
def test_mma_rule_inputs_agree(m, n, k, elem, acc, maps, target):
    """``mma_kernel``: C[:m, :n] = A[:m, :] @ B[:, :n] over K = 1024 in steps of ``k``."""
    rng = np.random.default_rng(zlib.crc32(f"{m}x{n}x{k} {elem} {target}".encode()))
    a, b = _random(rng, (1024, 1024), elem), _random(rng, (1024, 1024), elem)
    exact = acc == "i32"
    c = np.full((1024, 1024), -7 if exact else np.nan, DTYPES[acc])
    compiled, whole, per_sg = _three_ways(mma_kernel(m, n, k, elem, acc, maps), target, [a, b, c])
    wide = np.int64 if exact else np.float64
    ref = c.copy()
    ref[:m, :n] = _tf32(a[:m], elem).astype(wide) @ _tf32(b[:, :n], elem).astype(wide)
    _assert_close(whole[2], ref, exact, "whole-tile interpreter vs numpy")
    _assert_close(per_sg[2], whole[2], exact, "per-subgroup vs whole-tile interpreter")
    # tf32: both the CPU device's DPAS emulation and the interpreter round the inputs to
    # tf32 (nearest even), so only the f32 accumulation order differs
    ta, tb = _tf32(a[:m], elem).astype(np.float64), _tf32(b[:, :n], elem).astype(np.float64)
    atol = (a.shape[1] + 1) * 2.0 ** -24 * float((np.abs(ta) @ np.abs(tb)).max()) if elem == "f32" else 5e-3
    _assert_close(compiled[2], per_sg[2], exact, f"{target} vs interpreter", atol)


def _tf32(x: np.ndarray, elem: str) -> np.ndarray:
    """f32 tile_mma inputs are tf32 (10-bit mantissa) in both the interpreter and DPAS."""
    if elem != "f32":
        return x
    from xetile_dsl.interpreter.values import round_tf32

    return round_tf32(x)


def test_rfc_wg_map_copy_agrees_in_the_interpreter():
    """The RFC's wg_map example (round-robin rows, wrap-around columns) loading and
    storing back a 128x128 tile at row 64: every element stays where it is, per subgroup
    and on whole tiles.  (Not run on the CPU device: building this kernel there takes
    about a minute; ``xd.compile_mlir(rules.RFC_COPY, "cpu-pvc").launch(...)`` works.)"""
    a = _random(np.random.default_rng(9), (512, 512), "f16")
    for subgroups in (False, True):
        b = a.copy()
        interpret(parse_module(rules.RFC_COPY), (1,), [b, 64], subgroups=subgroups)
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("maps", [rules.MAP_MISMATCH, rules.SPLIT_K], ids=["map-mismatch", "split-k"])
def test_rejected_mma_inputs_are_rejected_by_the_interpreter_too(maps):
    m, n, k, mm = maps
    _same_rejection(mma_kernel(m, n, k, "f16", "f32", mm))


def test_rejected_subgroup_count_mismatch_is_rejected_by_the_interpreter_too():
    _same_rejection(rules.COUNT_MISMATCH)


def _same_rejection(text: str) -> None:
    with pytest.raises(LoweringError) as compiled:
        xd.compile_mlir(text, "cpu-pvc")
    args = [np.zeros(s, DTYPES[e]) for s, e in _memref_params(text)]
    with pytest.raises(LoweringError) as interpreted:
        interpret(parse_module(text), (1,), args, subgroups=True)
    assert interpreted.value.message == compiled.value.message


def _memref_params(text: str) -> list[tuple[tuple[int, ...], str]]:
    """(shape, element type) of each memref parameter of ``func.func @k(...)``."""
    params = re.search(r"func.func @k\((.*?)\)", text).group(1)
    out = []
    for dims in re.findall(r"memref<([0-9x]+x\w+)>", params):
        *shape, elem = dims.split("x")
        out.append((tuple(map(int, shape)), elem))
    return out


# --- workgroup vector ops through SLM (tests/lowering/test_wg_slm_rules.py) ---------------
#: rule -> (result value, result shape, map of the tile the result is stored through,
#: output array shape)
SLM_CASES = {
    "rfc-reduce": (slm_rules.RFC_REDUCE, "%r", (256, 1), wg((32, 1), (8, 1)), (256, 16)),
    "broadcast": (slm_rules.BROADCAST, "%d", (256, 256), wg((16, 1), (16, 256)), (256, 256)),
    "conv-layout": (slm_rules.CONV_LAYOUT, "%r", (64, 64), wg((1, 4), (64, 16)), (64, 64)),
    "cross-reduce": (slm_rules.CROSS_REDUCE, "%r", (1, 64), wg((4, 1), (1, 64)), (1, 64)),
}


def _stored(rule, result: str, shape, store_map: str, out_shape) -> str:
    """The rule's kernel with its result stored to a second array ``%o``."""
    body, ins = rule
    out = f"memref<{out_shape[0]}x{out_shape[1]}xf32>"
    ot = tile(shape, "f32", store_map)
    store = f"""  %to = xetile.init_tile %o[%c0, %c0] : {out} -> {ot}
  xetile.store_tile {result}, %to : vector<{shape[0]}x{shape[1]}xf32>, {ot}
  func.return"""
    text = slm_rules._kernel(body, ins).replace("%a: memref<1024x1024xf32>)", f"%a: memref<1024x1024xf32>, %o: {out})")
    head, _, tail = text.rpartition("  func.return")
    return head + store + tail


def _slm_reference(name: str, a: np.ndarray) -> np.ndarray:
    if name == "rfc-reduce":
        return a[:256, :128].sum(1, dtype=np.float64)[:, None]
    if name == "broadcast":
        v = a[:256, :256]
        return v - v.max(1, keepdims=True)
    if name == "conv-layout":
        return a[:64, :64]
    return a[:64, :64].sum(0, dtype=np.float64)[None]


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
@pytest.mark.parametrize("name", sorted(SLM_CASES))
def test_workgroup_vector_rule_inputs_agree(name, target):
    rule, result, shape, store_map, out_shape = SLM_CASES[name]
    a = _random(np.random.default_rng(sorted(SLM_CASES).index(name)), (1024, 1024), "f32")
    o = np.full(out_shape, np.nan, np.float32)
    compiled, whole, per_sg = _three_ways(_stored(rule, result, shape, store_map, out_shape), target, [a, o])
    ref = o.copy()
    ref[:shape[0], :shape[1]] = _slm_reference(name, a)
    _assert_close(whole[1], ref, False, "whole-tile interpreter vs numpy")
    _assert_close(per_sg[1], whole[1], False, "per-subgroup vs whole-tile interpreter")
    _assert_close(compiled[1], per_sg[1], False, f"{target} vs interpreter")


def test_compile_mlir_keeps_every_stage_and_the_abi():
    """compile_mlir gives the same stages as compile(): the wg kernel's XeGPU has the
    subgroup pieces, the ABI one array per memref (pointer, extents, strides) and
    num_subgroups x lanes work items.  (PVC: each subgroup's 64x64 f32 accumulator does not
    fit ARC's register file, which the register budget rejects.)"""
    m, n, k, maps = rules.ROUND_ROBIN
    kernel = xd.compile_mlir(mma_kernel(m, n, k, "f16", "f32", maps), "cpu-pvc")
    assert {"xetile", "xegpu", "simt", "llvm", "spirv"} <= set(kernel.asm)
    assert "wg_map" in kernel.asm["xetile"] and "xegpu.dpas" in kernel.asm["xegpu"]
    assert [(p.name, p.dtype, p.ndim) for p in kernel.abi.params] == [("a", "f16", 2), ("b", "f16", 2), ("c", "f32", 2)]
    assert kernel.abi.workgroup_size == 4 * 16
    with pytest.raises(ValueError, match="interpret"):
        xd.compile_mlir(rules.RFC_COPY, "interpret")


# --- order=[0, 1] and scattered tiles (tests/lowering/test_transposed_scattered_rules.py) --
def _jit_agree(kernel, target: str, grid, args: list, consts: dict) -> tuple[list, list]:
    """(compiled, interpreted) copies of ``args`` after running the ``@jit`` kernel."""
    runs = [[x.copy() if isinstance(x, np.ndarray) else x for x in args] for _ in range(2)]
    kernel.on(target)[grid](*runs[0], **consts)
    kernel.on("interpret")[grid](*runs[1], **consts)
    return runs[0], runs[1]


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
@pytest.mark.parametrize("which", ["at", "bt"])
def test_transposed_operand_gemm_agrees(which, target):
    """The rule tests' GEMMs with a transposed operand (BM=8, BN=16, BK=16): B^T as a
    32-bit transpose giving VNNI, A^T as a plain transpose."""
    import xetile_dsl.language as xt
    from xetile_dsl.kernels.gemm_transposed import matmul_at_kernel, matmul_bt_kernel

    M, N, K = 32, 32, 64  # rows of A^T (M wide) must be >= 64 bytes for PVC's 2D block reads
    rng = np.random.default_rng(11)
    a, b = _random(rng, (M, K), "f16"), _random(rng, (K, N), "f16")
    kernel, ops = (matmul_bt_kernel, [a, np.ascontiguousarray(b.T)]) if which == "bt" else \
        (matmul_at_kernel, [np.ascontiguousarray(a.T), b])
    c = np.full((M, N), np.nan, np.float32)
    compiled, interp = _jit_agree(kernel, target, (M // 8, N // 16), [*ops, c, K],
                                  {"BM": 8, "BN": 16, "BK": 16, "ACC": xt.float32})
    _assert_close(interp[2], a.astype(np.float64) @ b.astype(np.float64), False, "interpreter vs numpy")
    _assert_close(compiled[2], interp[2], False, f"{target} vs interpreter")


def test_gather_agrees():
    """create_tdesc + masked load, one element per lane: offsets past ``n`` read 0."""
    from kernels.scattered import gather_kernel

    n = 100
    rng = np.random.default_rng(12)
    src = _random(rng, (1, n), "f32")
    idx = rng.integers(0, 64, (1, 64)).astype(np.int32)
    compiled, interp = _jit_agree(gather_kernel, "cpu-pvc", (2,), [src, idx, np.full((1, 64), -1, np.float32), n],
                                  {"N": 32})
    np.testing.assert_array_equal(compiled[2], interp[2])
    offs = idx[0] * 2 + 1
    np.testing.assert_array_equal(interp[2][0], np.where(offs < n, src[0, np.minimum(offs, n - 1)], 0))


def test_atomic_max_with_repeated_offsets_agrees():
    """xegpu.atomic_rmw maxs with an all-true mask, several workgroups and repeated
    offsets (the rule test's KIND=max, N=16, on ARC)."""
    from kernels.scattered import atomic_accumulate_kernel

    rng = np.random.default_rng(13)
    x = rng.integers(-1000, 1000, (4, 16)).astype(np.int32)
    idx = rng.integers(0, 8, (1, 16)).astype(np.int32)
    out = np.full((1, 16), -5000, np.int32)
    compiled, interp = _jit_agree(atomic_accumulate_kernel, "cpu-arc", (4,), [x, idx, out], {"KIND": "max", "N": 16})
    np.testing.assert_array_equal(compiled[2], interp[2])
    ref = out.copy()
    np.maximum.at(ref[0], np.tile(idx[0], 4), x.reshape(-1))
    np.testing.assert_array_equal(interp[2], ref)
