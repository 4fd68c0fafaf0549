"""A K loop's 2D block prefetches through address payloads made before the loop
(codegen/emit/prefetch_payloads.py): the LLVM IR sets only the moving coordinate per
iteration, and IGC's machine code keeps the payload registers, prefetches the same
messages with the same cache bits, and loses the per-iteration payload rebuild
(RFC 2.1 GEMM on pvc: 68 -> 53 hot-loop instructions)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from conftest_tools import require_ocloc
from tests.isa.test_gemm_wg_isa import dpas_runs, instructions
from xetile_dsl.kernels.gemm_wg import MP_A, MP_B, MP_C, gemm_prefetch_kernel, gemm_wg_kernel
from xetile_dsl.tools import isa as listing
from xetile_dsl.tools import ocloc

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
CREATE = "__builtin_IB_subgroup_createBlock2DAddressPayload"
AP_CALL = re.compile(r'call spir_func \w+ @"?(__builtin_IB_subgroup_\w+|_Z\d+intel_sub_group_2d_block_prefetch\w+)"?'
                     r'\(.*?(i32 \d+)?\)$')


@xd.jit
def own_pieces_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, PF: xt.constexpr):
    """RFC 2.1 with each subgroup prefetching its own A and B pieces (the mma maps)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=MP_A)
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=MP_B)
    pa = xt.init_tile(a, [m, PF * BK], [BM, BK], wg_map=MP_A)
    pb = xt.init_tile(b, [PF * BK, n], [BK, BN], wg_map=MP_B)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=MP_C)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, 0, BK)
        pb = xt.update_tile_offset(pb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=MP_C))


@xd.jit
def stream_kernel(a, K, L: xt.constexpr):
    """One subgroup prefetching 8x32 slices of ``a`` along K with locality ``L``, and a
    slice that never moves."""
    p = xt.init_tile(a, [0, 0], [8, 32])
    fixed = xt.init_tile(a, [8, 0], [8, 32])
    for k in range(0, K, 32):
        xt.prefetch_tile(p, locality=L)
        xt.prefetch_tile(fixed, locality=L)
        p = xt.update_tile_offset(p, 0, 32)


def _loop_body(llvm: str) -> str:
    """The kernel's LLVM text from its first loop body to the loop's exit."""
    return llvm[llvm.index("for.body:"):llvm.index("for.exit:")]


def _calls(text: str) -> list[tuple[str, str | None]]:
    """(callee, last i32 constant argument) of each payload builtin / OpenCL prefetch call."""
    return [(m.group(1), m.group(2)) for ln in text.splitlines() if (m := AP_CALL.search(ln.strip()))]


@pytest.fixture(scope="module")
def rfc21():
    require_ocloc()
    return {dt: xd.compile(gemm_prefetch_kernel, {k: v.replace("f16", dt) for k, v in SIG.items()},
                           {"BM": 256, "BN": 256, "BK": 32, "PF": 3}, target="pvc") for dt in ("f16", "bf16")}


def test_payloads_are_made_before_the_loop_and_only_the_k_coordinate_moves(rfc21):
    llvm = rfc21["f16"].asm["llvm"]
    entry = llvm[:llvm.index("for.header:")]
    assert entry.count(f'@"{CREATE}"(') == 2  # A's and B's prefetch slice
    assert "intel_sub_group_2d_block_prefetch" not in llvm
    ap = "__builtin_IB_subgroup_block_read_ap_prefetch_u16_m8k16v2"
    # A's slice moves along x (K is A's column), B's along y (K is B's row); cached in L1 and L3
    assert _calls(_loop_body(llvm)) == [("__builtin_IB_subgroup_setBlock2DAddressPayloadBlockX", None),
                                        (ap, "i32 4"),
                                        ("__builtin_IB_subgroup_setBlock2DAddressPayloadBlockY", None),
                                        (ap, "i32 4")]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_rfc21_hot_loop_keeps_the_prefetch_payloads(rfc21, dtype):
    isa = rfc21[dtype].asm["isa"]
    loop = ocloc.hot_loop(isa)
    prefetches = [ins for ins in listing.instructions(loop) if ins.kind == "prefetch"]
    assert [p.message for p in prefetches] == ["load_block2d.ugm.d16.a64.ca.ca"] * 2  # as the OpenCL builtin's
    # no 64-bit base move into a payload inside the loop (the rebuild wrote r.0:uq/q every K step)
    assert not re.search(r"mov \(1\|M0\)\s+r\d+\.0<1>:u?q", loop)
    n = len(instructions(loop))
    print(f"RFC 2.1 {dtype} pvc hot loop: {n} instructions (68 before)")
    assert dpas_runs(loop) == [32] and n <= 53


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_own_pieces_variant_pvc(ocloc_path, dtype):
    kernel = xd.compile(own_pieces_kernel, {k: v.replace("f16", dtype) for k, v in SIG.items()},
                        {"BM": 256, "BN": 256, "BK": 32, "PF": 3}, target="pvc")
    assert kernel.asm["zebin"].execution_env("own_pieces_kernel").get("spill_size", 0) == 0
    loop = ocloc.hot_loop(kernel.asm["isa"])
    sends = [ln for ln in loop.splitlines() if "load_block2d" in ln]
    n = len(instructions(loop))
    print(f"own-pieces {dtype} pvc hot loop: {n} instructions (68 before)")
    assert sum(ln.split()[2] != "null" for ln in sends) <= 4 and sum(ln.split()[2] == "null" for ln in sends) <= 3
    assert len(dpas_runs(loop)) <= 2 and ocloc.count(loop, ocloc.DPAS) == 32 and n <= 53


@pytest.mark.parametrize("locality, option, suffix", [(3, "i32 4", ".ca.ca"), (2, "i32 2", ".uc.ca")])
def test_payload_prefetch_cache_bits_and_fixed_slice(ocloc_path, locality, option, suffix):
    """The LSC_LDCC option of each locality gives the cache bits the OpenCL builtin's
    decorations gave (test_gemm_two_level_isa.py::test_prefetch_locality_sets_the_lsc_cache_bits);
    the slice that never moves sets no coordinate in the loop."""
    kernel = xd.compile(stream_kernel, {"a": "f16[:,:]", "K": "i32"}, {"L": locality}, target="pvc")
    llvm = kernel.asm["llvm"]
    ap = "__builtin_IB_subgroup_block_read_ap_prefetch_u16_m8k16v2"
    assert _calls(_loop_body(llvm)) == [("__builtin_IB_subgroup_setBlock2DAddressPayloadBlockX", None),
                                        (ap, option), (ap, option)]
    loop = ocloc.hot_loop(kernel.asm["isa"])
    assert [ins.message for ins in listing.instructions(loop) if ins.kind == "prefetch"] == \
        [f"load_block2d.ugm.d16.a64{suffix}"] * 2


def test_cpu_device_defines_the_payload_builtins(ocloc_path):
    """The CPU device runs the same prefetches through hoisted payloads, with the payload
    builtins defined in the module from their fields (codegen/builtins/payload.py; a
    prefetch does nothing there): none is left for a driver to resolve."""
    llvm = xd.compile(gemm_prefetch_kernel, SIG, {"BM": 256, "BN": 256, "BK": 32, "PF": 3}, target="cpu").asm["llvm"]
    assert "__xetile_emulated_createBlock2DAddressPayload" in llvm
    assert re.search(r'^define [^@]*@"?__builtin_IB_subgroup_block_read_ap_prefetch_', llvm, re.M)
    assert not re.search(r'^declare [^@]*@"?__builtin_IB_', llvm, re.M)


@xd.jit
def abt_kernel(a, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
               SN: xt.constexpr, PF: xt.constexpr):
    """``gemm_wg_kernel`` with B stored N x K (``bt``), read through an ``order=(0, 1)``
    tile and prefetched in its own row-major layout (benchmarks/gemm_isa.py's A.Bt)."""
    NS = SM * SN
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK]))
    tb = xt.init_tile(bt, [0, n], [BK, BN], order=(0, 1), wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN]))
    pa = xt.init_tile(a, [m, PF * BK], [BM, BK], wg_map=xt.wg_map(sg_layout=[NS, 1], sg_data=[BM // NS, BK]))
    pb = xt.init_tile(bt, [n, PF * BK], [BN, BK], wg_map=xt.wg_map(sg_layout=[NS, 1], sg_data=[BN // NS, BK]))
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=mp_c)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, 0, BK)
        pb = xt.update_tile_offset(pb, 0, BK)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


def test_abt_hot_loop_pvc(ocloc_path):
    """A.Bt 256x256 [8, 4] (goal <= 70): 81 instructions before, 69 measured."""
    kernel = xd.compile(abt_kernel, {"a": "f16[:,:]", "bt": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
                        {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4, "PF": 3}, target="pvc")
    hot = kernel.report().hot
    print(f"A.Bt 256x256 pvc hot loop: {hot.instructions} instructions, {hot.dpas_runs} dpas runs")
    assert hot.dpas == 32 and hot.dpas_runs <= 2 and hot.counts["prefetch"] == 2 and hot.instructions <= 70


def test_128x256_over_4x8_pvc(ocloc_path):
    """The 128x256 tile over [4, 8] subgroups (32x32 pieces, benchmarks/gemm_isa.py's M=4096
    row; not coalesced: accumulator + K step = the whole 128-GRF file): 112 -> 83."""
    kernel = xd.compile(gemm_wg_kernel, SIG, {"BM": 128, "BN": 256, "BK": 32, "SM": 4, "SN": 8, "PF": 3,
                                              "ACC": xt.float32}, target="pvc")
    hot = kernel.report().hot
    print(f"128x256 [4,8] pvc hot loop: {hot.instructions} instructions")
    assert hot.dpas == 16 and hot.counts["prefetch"] == 2 and hot.instructions <= 83
