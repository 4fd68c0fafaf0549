"""Intel builtins (DPAS, 2D block IO) emulated on the OpenCL CPU device vs numpy, and
the GPU form (real Intel builtin names imported) for pvc.

Host-side packing below is written from the specs (reference §2.4 and the sg_map
rules), independently of the code generator.
"""
from __future__ import annotations

import subprocess

import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

from cpu_launch import build_kernel, lane_ptr, run
from tf32_ref import tf32_round
from xetile_dsl.codegen.builtins.dpas import dpas_signature
from xetile_dsl.codegen.builtins.intel import IntelBuiltins
from xetile_dsl.codegen.builtins.mangle import Ptr, mangle, vec
from xetile_dsl.codegen.spirv.backend import SPIRV_DATALAYOUT, SPIRV_TRIPLE
from xetile_dsl.codegen.spirv.translate import emit_spirv
from xetile_dsl.targets.target import ARC, PVC

RNG = np.random.default_rng(1234)
NP_TYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
            "tf32": np.float32, "f32": np.float32, "i32": np.int32}
K_OF = {"f16": 16, "bf16": 16, "i8": 32, "u8": 32, "tf32": 8}


# --- DPAS ---------------------------------------------------------------------------
def _random(type_name, shape):
    if type_name in ("i8", "u8"):
        lo, hi = (-128, 128) if type_name == "i8" else (0, 256)
        return RNG.integers(lo, hi, size=shape).astype(NP_TYPES[type_name])
    if type_name == "i32":
        return RNG.integers(-1000, 1000, size=shape).astype(np.int32)
    return RNG.uniform(-2, 2, size=shape).astype(NP_TYPES[type_name])


def _pack_lanes(x: np.ndarray, word) -> np.ndarray:
    """Rows of ``x`` packed into ``word``s, lower column in the lower bits."""
    return np.ascontiguousarray(x).view(word)


def _pack_a(a: np.ndarray, a_type: str, n: int) -> np.ndarray:
    """A (m x K) -> per-lane operands, shape (n lanes, components)."""
    m, k = a.shape
    if a_type == "tf32":  # component i of lane n = A[2i + (n >= K)][n mod K]
        comps = max(1, m // 2)
        lanes = np.zeros((n, comps), np.float32)
        for lane in range(n):
            for i in range(comps):
                row = 2 * i + lane // k
                lanes[lane, i] = a[row, lane % k] if row < m else 0
        return lanes
    word = {16: np.uint16, 32: np.uint32}[k * a.itemsize * 8 // n]
    return _pack_lanes(a, word).T.copy()  # (n, m): component i = row i


def _pack_b(b: np.ndarray) -> np.ndarray:
    """B (K x n) -> per-lane VNNI dwords, shape (n, K*bits/32)."""
    if b.dtype == np.float32:
        return b.T.copy()
    return _pack_lanes(b.T, np.uint32)


def _ref(a, b, c, acc_type, a_type=None):
    if a_type == "tf32":
        a, b = tf32_round(a), tf32_round(b)
    if acc_type == "i32":
        return (a.astype(np.int64) @ b.astype(np.int64) + c).astype(np.int64).astype(np.uint32).view(np.int32)
    return a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)


def _dpas_kernel(target, a_t, b_t, acc_t, m):
    sig = dpas_signature(target, a_t, b_t, acc_t, m)
    a_ty, b_ty, c_ty = sig.fnty.args

    def body(bi, builder, args):
        lane = bi.lane_id(builder)
        a = builder.load(lane_ptr(builder, args[0], lane, a_ty), typ=a_ty)
        b = builder.load(lane_ptr(builder, args[1], lane, b_ty), typ=b_ty)
        c = builder.load(lane_ptr(builder, args[2], lane, c_ty), typ=c_ty)
        d = builder.call(bi.dpas(a_t, b_t, acc_t, m), [a, b, c])
        builder.store(d, lane_ptr(builder, args[3], lane, c_ty))

    return build_kernel(target, True, 4, body)[0]


DPAS_CASES = [
    (PVC, "f16", "f16", "f32", 8), (PVC, "f16", "f16", "f32", 1), (PVC, "f16", "f16", "f32", 2),
    (PVC, "f16", "f16", "f32", 4), (PVC, "bf16", "bf16", "f32", 8), (PVC, "bf16", "bf16", "f32", 1),
    (PVC, "i8", "i8", "i32", 8), (PVC, "u8", "i8", "i32", 4), (PVC, "tf32", "tf32", "f32", 8),
    (PVC, "f16", "f16", "f16", 8), (PVC, "bf16", "bf16", "bf16", 2),
    (ARC, "f16", "f16", "f32", 8), (ARC, "bf16", "bf16", "f32", 2), (ARC, "i8", "i8", "i32", 8),
    (ARC, "u8", "u8", "i32", 1),
]


@pytest.mark.parametrize("target,a_t,b_t,acc_t,m", DPAS_CASES,
                         ids=[f"{c[0].name}-{c[1]}x{c[2]}-{c[3]}-m{c[4]}" for c in DPAS_CASES])
def test_dpas_matches_numpy(target, a_t, b_t, acc_t, m):
    n, k = target.subgroup_size, K_OF[a_t]
    a, b, c = _random(a_t, (m, k)), _random(b_t, (k, n)), _random(acc_t, (m, n))
    c_lanes = c.T.copy()
    if acc_t == "bf16":
        c_lanes = c_lanes.view(np.uint16)
    out = np.zeros_like(c_lanes)
    _, _, _, got = run(_dpas_kernel(target, a_t, b_t, acc_t, m), [_pack_a(a, a_t, n), _pack_b(b), c_lanes, out], n)
    if acc_t == "bf16":
        got = got.view(ml_dtypes.bfloat16)
    got = got.T
    want = _ref(a, b, c, acc_t, a_t)
    if acc_t == "i32":
        np.testing.assert_array_equal(got, want)
    elif a_t == "tf32":  # inputs rounded like the reference: only f32 accumulation error left
        bound = np.abs(tf32_round(a)).astype(np.float64) @ np.abs(tf32_round(b)) + np.abs(c)
        np.testing.assert_allclose(got, want, rtol=0, atol=(k + 1) * 2.0 ** -24 * bound.max())
    else:
        tol = {"f32": 1e-5, "f16": 2e-3, "bf16": 1e-2}[acc_t]
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 8)


def test_tf32_dpas_rounds_inputs_to_nearest_even():
    """Inputs whose dropped 13 bits are just below, at (ties both ways) and above half an
    ulp of tf32: products of ones-free powers of two are exact, so D is compared exactly."""
    n, k, m = PVC.subgroup_size, K_OF["tf32"], 8
    one_ulp = 2.0 ** -10
    below, tie_down, tie_up, above = (1 + 0xFFF * 2.0 ** -23, 1 + 0x1000 * 2.0 ** -23,
                                      1 + one_ulp + 0x1000 * 2.0 ** -23, 1 + 0x1001 * 2.0 ** -23)
    values = np.array([below, tie_down, tie_up, above, -tie_up, -above, 3.0, 0.5], np.float32)
    a = np.zeros((m, k), np.float32)
    a[np.arange(m), np.arange(m) % k] = values  # row r picks one value in column r
    b = np.eye(k, n, dtype=np.float32)  # B[kk][kk] = 1: D[r][kk] = tf32(A[r][kk]) * tf32(1)
    b[0, 1] = tie_down  # and one rounded B element: D[0][1] = tf32(below) * tf32(tie_down)
    c = np.zeros((m, n), np.float32)
    out = np.zeros((n, m), np.float32)
    operands = [_pack_a(a, "tf32", n), _pack_b(b), c.T.copy(), out]
    _, _, _, got = run(_dpas_kernel(PVC, "tf32", "tf32", "f32", m), operands, n)
    got = got.T
    rounded = np.array([1.0, 1.0, 1 + 2 * one_ulp, 1 + one_ulp, -(1 + 2 * one_ulp), -(1 + one_ulp), 3.0, 0.5],
                       np.float32)
    np.testing.assert_array_equal(np.diag(got[:, :k]), rounded)
    assert got[0, 1] == 1.0  # tf32(below) * tf32(tie_down) = 1 * 1
    np.testing.assert_array_equal(got, _ref(a, b, c, "f32", "tf32").astype(np.float32))


# --- 2D loads and stores ------------------------------------------------------------
def _fragment_ref(surface, x, y, rows, cols, wi_layout, wi_data, lane):
    """This lane's sg_map fragment of the ``rows x cols`` block at (x, y), zero-filled."""
    (l0, l1), (d0, d1) = wi_layout, wi_data
    lr, lc = divmod(lane, l1)
    h, w = surface.shape
    out = []
    for cb in range(cols // (l1 * d1)):
        for rb in range(rows // (l0 * d0)):
            for i in range(d0):
                for j in range(d1):
                    r, col = y + rb * l0 * d0 + lr * d0 + i, x + cb * l1 * d1 + lc * d1 + j
                    out.append(surface[r, col] if 0 <= r < h and 0 <= col < w else 0)
    return np.array(out, dtype=surface.dtype)


def _surface(h, w, bits, pitch_elems):
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    full = RNG.integers(1, 1 << min(bits, 31), size=(h, pitch_elems)).astype(dtype)
    return full, full[:, :w]


def _const(v):
    return ir.Constant(ir.IntType(32), v)


LOAD_CASES = [  # target, elem_bits, rows, cols, count, wi_layout, wi_data, (x, y)
    (PVC, 16, 8, 16, 1, (1, 16), (1, 1), (30, 15)),    # f16 A, 2D read (emulated)
    (PVC, 16, 8, 16, 2, (1, 16), (1, 1), (-4, -3)),    # f16 A, 2 blocks
    (PVC, 16, 16, 16, 1, (1, 16), (2, 1), (34, 12)),   # f16 B, VNNI read_transform
    (PVC, 8, 4, 32, 1, (1, 16), (1, 2), (20, 18)),     # i8 A
    (PVC, 8, 16, 16, 1, (1, 16), (4, 1), (36, 10)),    # i8 B VNNI (plain loads)
    (ARC, 16, 8, 16, 1, (1, 8), (1, 2), (30, 15)),     # f16 A on ARC
    (ARC, 16, 16, 8, 1, (1, 8), (2, 1), (36, 12)),     # f16 B VNNI on ARC
    (ARC, 32, 8, 8, 1, (1, 8), (1, 1), (-2, 16)),
]


@pytest.mark.parametrize("case", LOAD_CASES, ids=lambda c: f"{c[0].name}-{c[1]}b-{c[2]}r{c[3]}x{c[4]}c-d{c[6]}")
def test_load_2d_fragment_and_zero_fill(case):
    target, bits, rows, cols, count, wl, wd, (x, y) = case
    n, h, w, pitch = target.subgroup_size, 20, 40, 48
    full, surface = _surface(h, w, bits, pitch)
    v = rows * cols * count // n
    vec_ty = ir.VectorType(ir.IntType(bits), v)

    def body(bi, builder, args):
        lane = bi.lane_id(builder)
        fn = bi.load_2d(bits, rows, cols, count, wl, wd)
        eb = bits // 8
        frag = builder.call(fn, [args[0], _const(w * eb), _const(h), _const(pitch * eb), _const(x), _const(y)])
        builder.store(frag, lane_ptr(builder, args[1], lane, vec_ty))

    spirv, _ = build_kernel(target, True, 2, body)
    out = np.zeros((n, v), full.dtype)
    _, got = run(spirv, [full, out], n)
    want = np.stack([_fragment_ref(surface, x, y, rows, cols * count, wl, wd, lane) for lane in range(n)])
    np.testing.assert_array_equal(got, want)
    assert (want == 0).any() and (want != 0).any()  # the case really is partly out of bounds


STORE_CASES = [(PVC, 32, 8, 16, (1, 16), (1, 1), (30, 15)), (PVC, 16, 8, 16, (1, 16), (1, 1), (-3, 14)),
               (ARC, 32, 8, 8, (1, 8), (1, 1), (36, -2)), (ARC, 16, 4, 16, (1, 8), (1, 2), (30, 17))]


@pytest.mark.parametrize("case", STORE_CASES, ids=lambda c: f"{c[0].name}-{c[1]}b-{c[2]}r{c[3]}-d{c[5]}")
def test_store_2d_writes_only_in_bounds(case):
    target, bits, rows, cols, wl, wd, (x, y) = case
    n, h, w, pitch = target.subgroup_size, 20, 40, 48
    dtype = {16: np.uint16, 32: np.uint32}[bits]
    sentinel = np.full((h, pitch), 7, dtype)
    v = rows * cols // n
    values = RNG.integers(100, 1000, size=(n, v)).astype(dtype)
    vec_ty = ir.VectorType(ir.IntType(bits), v)

    def body(bi, builder, args):
        lane = bi.lane_id(builder)
        frag = builder.load(lane_ptr(builder, args[1], lane, vec_ty), typ=vec_ty)
        eb = bits // 8
        builder.call(bi.store_2d(bits, rows, cols, wl, wd),
                     [args[0], _const(w * eb), _const(h), _const(pitch * eb), _const(x), _const(y), frag])

    spirv, _ = build_kernel(target, True, 2, body)
    got, _ = run(spirv, [sentinel, values], n)
    want = sentinel.copy()
    (l0, l1), (d0, d1) = wl, wd
    for lane in range(n):  # invert the fragment map: write each in-bounds element
        coords = _fragment_ref(np.arange(h * w).reshape(h, w) + 1, x, y, rows, cols, wl, wd, lane)
        for idx, flat in enumerate(coords):
            if flat:
                want.reshape(-1)[(flat - 1) // w * pitch + (flat - 1) % w] = values[lane, idx]
    np.testing.assert_array_equal(got, want)
    assert (got[:, w:] == 7).all()  # padding past the width is untouched


# --- load -> DPAS -> store: the layouts compose into a GEMM -----------------------------
@pytest.mark.parametrize("target", [PVC, ARC], ids=lambda t: t.name)
def test_load_dpas_store_is_gemm(target):
    n, m, k = target.subgroup_size, 8, 16
    a, b = _random("f16", (m, k)), _random("f16", (k, n))
    c = np.zeros((m, n), np.float32)
    a_wd = (1, 16 * 16 // n // 16)  # one 16/32-bit unit of A per lane (sg_map rules)
    a_n, b_n = m * k // n, k * n // n

    def body(bi, builder, args):
        a_frag = builder.call(bi.load_2d(16, m, k, 1, (1, n), a_wd), [args[0], _const(k * 2), _const(m), _const(k * 2), _const(0), _const(0)])
        b_frag = builder.call(bi.load_2d(16, k, n, 1, (1, n), (2, 1)), [args[1], _const(n * 2), _const(k), _const(n * 2), _const(0), _const(0)])
        sig = bi.dpas("f16", "f16", "f32", m).function_type
        d = builder.call(bi.dpas("f16", "f16", "f32", m),
                         [builder.bitcast(a_frag, sig.args[0]), builder.bitcast(b_frag, sig.args[1]), ir.Constant(sig.args[2], None)])
        store = bi.store_2d(32, m, n, (1, n), (1, 1))
        builder.call(store, [args[2], _const(n * 4), _const(m), _const(n * 4), _const(0), _const(0),
                             builder.bitcast(d, store.function_type.args[-1])])
        assert a_n * 16 == sig.args[0].count * sig.args[0].element.width and b_n * 16 == 256

    spirv, _ = build_kernel(target, True, 3, body)
    _, _, got = run(spirv, [a, b, c], n)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


# --- the GPU form ------------------------------------------------------------------------
def _call_dpas(bi, builder, m=8):
    """Unused declarations are dropped from the SPIR-V, so really call the builtin."""
    fn = bi.dpas("f16", "f16", "f32", m)
    builder.call(fn, [ir.Constant(t, None) for t in fn.function_type.args])


def _gpu_module(target):
    module = ir.Module("gpu")
    module.triple, module.data_layout = SPIRV_TRIPLE, SPIRV_DATALAYOUT
    bi = IntelBuiltins(module, target, emulate=False)
    kernel = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "k")
    kernel.calling_convention = "spir_kernel"
    builder = ir.IRBuilder(kernel.append_basic_block())
    _call_dpas(bi, builder)
    builder.ret_void()
    return module, bi


def test_pvc_gpu_module_imports_intel_builtins():
    module, bi = _gpu_module(PVC)
    assert bi.load_2d_kind(16, 8, 16, 2, (1, 16), (1, 1)) == "read"
    assert bi.load_2d_kind(16, 16, 16, 1, (1, 16), (2, 1)) == "read_transform"
    assert bi.store_2d_kind(32, 8, 16, (1, 16), (1, 1)) == "write"
    for fn in (bi.load_2d(16, 8, 16, 2, (1, 16), (1, 1)), bi.load_2d(16, 16, 16, 1, (1, 16), (2, 1)),
               bi.store_2d(32, 8, 16, (1, 16), (1, 1)), bi.prefetch_2d(16, 8, 16, 2)):
        assert fn.name.startswith("__xetile_")
    spirv = emit_spirv(str(module))
    names = ["_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_sDv8_iDv8_f",
             "_Z41intel_sub_group_2d_block_read_16b_8r16x2cPU3AS1viiiDv2_iPt",
             "_Z52intel_sub_group_2d_block_read_transform_16b_16r16x1cPU3AS1viiiDv2_iPj",
             "_Z42intel_sub_group_2d_block_write_32b_8r16x1cPU3AS1viiiDv2_iPj",
             "_Z45intel_sub_group_2d_block_prefetch_16b_8r16x2cPU3AS1viiiDv2_i"]
    text = _disassemble(spirv)
    for name in names:
        if text is None:
            assert name.encode() in spirv
        else:
            assert f'LinkageAttributes "{name}" Import' in text


def test_arc_reads_rows_with_subgroup_block_reads_and_no_2d_blocks():
    """ARC has no 2D block messages: an 8x16 f16 A block is read a row at a time with
    subgroup block reads (docs/decisions/016-transposes.md), and no 2D block builtin appears."""
    module, bi = _gpu_module(ARC)
    assert bi.load_2d_kind(16, 8, 16, 1, (1, 8), (1, 2)) == "rows"
    bi.load_2d(16, 8, 16, 1, (1, 8), (1, 2))
    bi.store_2d(32, 8, 8, (1, 8), (1, 1))
    bi.prefetch_2d(16, 8, 16, 1)
    spirv = emit_spirv(str(module))
    assert b"2d_block" not in spirv
    assert b"_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_iS_Dv8_f" in spirv


def _disassemble(spirv: bytes) -> str | None:
    try:
        return subprocess.run(["spirv-dis", "-"], input=spirv, capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return None


# --- small unit checks -------------------------------------------------------------------
def test_mangler_matches_reference_table():
    assert mangle("intel_sub_group_bf16_bf16_matrix_mad_k16", [vec(8, "s"), vec(8, "i"), vec(8, "s")]) == \
        "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_sDv8_iS_"
    assert mangle("intel_sub_group_u8_i8_matrix_mad_k32", [vec(4, "t"), vec(8, "i"), vec(4, "i")]) == \
        "_Z36intel_sub_group_u8_i8_matrix_mad_k32Dv4_tDv8_iDv4_i"
    assert mangle("intel_sub_group_tf32_tf32_matrix_mad_k8", ["f", vec(8, "f"), "f"]) == \
        "_Z39intel_sub_group_tf32_tf32_matrix_mad_k8fDv8_ff"
    assert mangle("intel_sub_group_i8_i8_matrix_mad_k32", [vec(8, "i")] * 3) == \
        "_Z36intel_sub_group_i8_i8_matrix_mad_k32Dv8_iS_S_"
    assert mangle("intel_sub_group_block_read8", [Ptr("j", 1, const=True)]) == "_Z27intel_sub_group_block_read8PU3AS1Kj"
    assert dpas_signature(PVC, "tf32", "tf32", "f32", 8).name == "_Z39intel_sub_group_tf32_tf32_matrix_mad_k8Dv4_fDv8_fS0_"


def test_memoized_and_validated():
    module = ir.Module("m")
    bi = IntelBuiltins(module, PVC, emulate=True)
    assert bi.dpas("f16", "f16", "f32", 8) is bi.dpas("f16", "f16", "f32", 8)
    assert bi.load_2d(16, 8, 16, 1, (1, 16), (1, 1)) is bi.load_2d(16, 8, 16, 1, (1, 16), (1, 1))
    with pytest.raises(ValueError, match="M must be"):
        bi.dpas("f16", "f16", "f32", 3)
    with pytest.raises(ValueError, match="accumulates"):
        IntelBuiltins(module, ARC, True).dpas("f16", "f16", "f16", 8)
    with pytest.raises(ValueError, match="elements per lane"):
        bi.load_2d(16, 32, 16, 2, (1, 16), (1, 1))  # 64 per lane: no such SPIR-V vector
    assert not bi.is_legal_load_2d(16, 8, 16, 1, (1, 8), (1, 1))
