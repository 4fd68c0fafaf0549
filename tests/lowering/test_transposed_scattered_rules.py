"""The order=[0, 1] and scattered-tile lowering rules, read from each stage's MLIR text
(which must also parse back and print the same)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.dialects import parse_module, print_module
from kernels.scattered import atomic_accumulate_kernel, gather_kernel
from xetile_dsl.kernels.gemm_transposed import matmul_at_kernel, matmul_bt_kernel


def _lines(text: str, needle: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if needle in ln]


def _round_trips(kernel) -> None:
    for stage in ("xetile", "xegpu", "simt"):
        assert print_module(parse_module(kernel.asm[stage])) == kernel.asm[stage]


def _gemm(kernel, dtype, target):
    names = ("at", "b") if kernel is matmul_at_kernel else ("a", "bt")
    sig = {names[0]: f"{dtype}[:,:]", names[1]: f"{dtype}[:,:]", "c": "f32[:,:]", "K": "i32"}
    return xd.compile(kernel, sig, {"BM": 8, "BN": 16, "BK": 16, "ACC": xt.float32}, target=target)


def test_f16_bt_is_a_32bit_transpose_giving_vnni():
    k = _gemm(matmul_bt_kernel, "f16", "pvc")
    loads = _lines(k.asm["xegpu"], "transpose_bit_width")
    # the 16x16 descriptor over B^T (N rows, K columns) loads as VNNI [K/2, N, 2]
    assert loads and all("!xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>" in ln for ln in loads)
    simt = _lines(k.asm["simt"], "transpose_bit_width")
    # the descriptor carries B's map transposed: [1, 16] x [2, 1] -> [16, 1] x [1, 2]
    assert all("wi_layout = [16, 1], wi_data = [1, 2]" in ln and "-> vector<8x2xf16>" in ln for ln in simt)
    _round_trips(k)


@pytest.mark.parametrize("target,a_map", [("pvc", "wi_layout = [16, 1], wi_data = [1, 1]"),
                                          ("arc", "wi_layout = [8, 1], wi_data = [2, 1]")])
def test_f16_at_is_a_plain_transpose_with_the_transposed_a_map(target, a_map):
    k = _gemm(matmul_at_kernel, "f16", target)
    loads = _lines(k.asm["simt"], "xegpu.load_nd %ta")
    assert loads and all("transpose" in ln and "transpose_bit_width" not in ln and a_map in ln for ln in loads)
    # the descriptor is over A^T: 16 (K) rows x 8 (M) columns; on pvc the 8-row tile reads
    # the whole 16-column transposed message and keeps 8 rows (block_messages.choose_transposed)
    cols = 16 if target == "pvc" else 8
    assert all(f"tensor_desc<16x{cols}xf16" in ln for ln in loads)


def test_gather_is_create_tdesc_and_masked_load_one_element_per_lane():
    sig = {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]", "n": "i32"}
    k = xd.compile(gather_kernel, sig, {"N": 32}, target="pvc")
    assert len(_lines(k.asm["xegpu"], "xegpu.create_tdesc")) == 2  # 32 offsets = two 16-lane blocks
    assert all("vector<16xi1> -> vector<16xf32>" in ln for ln in _lines(k.asm["xegpu"], "xegpu.load "))
    assert all("vector<1xi1> -> vector<1xf32>" in ln for ln in _lines(k.asm["simt"], "xegpu.load "))
    _round_trips(k)


def test_atomic_rmw_is_xegpu_atomic_with_an_all_true_mask():
    sig = {"x": "i32[:,:]", "idx": "i32[:,:]", "out": "i32[:,:]"}
    k = xd.compile(atomic_accumulate_kernel, sig, {"KIND": "max", "N": 16}, target="arc")
    atomics = _lines(k.asm["xegpu"], "xegpu.atomic_rmw")
    assert len(atomics) == 2 and all(ln.split("=", 1)[1].strip().startswith("xegpu.atomic_rmw maxs") for ln in atomics)
    _round_trips(k)
