"""Adding a target is one ``Target`` entry: two GPUs that exist nowhere but here are
defined in this file, registered with ``targets.register_target`` and, touching no other
file, a GEMM (``ops.matmul``) and a softmax (``ops.softmax``) are compiled for them and
run on the CPU device (their ``cpu-<name>`` flavour), checked against numpy with bounds
derived from the arithmetic.  The IR shows that the new facts were the ones obeyed:

* ``wide16``: PVC's ISA with half its SLM, 2D block reads of at most 16 rows (PVC: 32)
  and 2D block writes of at most 4 rows (PVC: 8), so the GEMM's 8-row result blocks
  cannot be written as 2D blocks and its coalesced reads stop at 16 rows;
* ``narrow8``: ARC's 8-lane ISA (no 2D block IO) with a quarter of PVC's SLM: DPAS
  blocks 8 wide, the ops' tiles from the rule for a target that declares none;
* ``m4``, ``m2``, ``m1``: PVC's ISA whose DPAS repeats at most 4, 2 or 1 rows (no tf32
  flavour): accumulators and every other tile that is no DPAS operand are blocked in rows
  of that count (``Target.dpas_m``), so a GEMM, the workgroup GEMM and a softmax run with
  4-, 2- and 1-row DPAS.
"""
from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import replace

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from f32_accumulate_ref import exact_products_matmul, excess
from xetile_dsl import ops
from xetile_dsl.errors import CompilationError, UsageError
from xetile_dsl.kernels import gemm_wg
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul import matmul_kernel
from xetile_dsl.ops.rows import softmax_kernel
from xetile_dsl.targets import launch_facts
from xetile_dsl.targets import (ARC, PVC, TARGETS, OpTiles, Target, compile_target, cpu_device, register_target,
                                target_aliases)
from xetile_dsl.targets.target import BLOCK_ROWS_WITHOUT_DPAS


def _rows_at_most(shapes, rows: int):
    """The 2D block shapes ``shapes`` with no more than ``rows`` rows."""
    return tuple(replace(s, rows=tuple(r for r in s.rows if r <= rows)) for s in shapes if min(s.rows) <= rows)


WIDE16 = replace(
    PVC, name="wide16", slm_bytes=64 * 1024, gemm_tiles=PVC.gemm_tiles[-1:], op_tiles=None, cpu_flavour=True,
    block2d_read=_rows_at_most(PVC.block2d_read, 16), block2d_prefetch=_rows_at_most(PVC.block2d_prefetch, 16),
    block2d_write=_rows_at_most(PVC.block2d_write, 4))
NARROW8 = replace(ARC, name="narrow8", slm_bytes=32 * 1024, op_tiles=None, cpu_flavour=True)
NEW_TARGETS = {t.name: t for t in (WIDE16, NARROW8)}


def _dpas_rows_at_most(rows: int) -> Target:
    """PVC with every DPAS flavour's repeat counts cut at ``rows`` and no tf32 flavour
    (its A rows are half a register: fewer than 4 rows have no lane layout); the ops'
    tiles from the rule, the row ops' 8 rows per program (PVC: 4), so that a softmax
    program holds several row blocks."""
    dpas = tuple(replace(c, m_values=tuple(m for m in c.m_values if m <= rows)) for c in PVC.dpas if c.a_type != "tf32")
    target = replace(PVC, name=f"m{rows}", dpas=dpas, op_tiles=None, cpu_flavour=True)
    return replace(target, op_tiles=replace(OpTiles.rule_for(target), rows=(8, 256)))


#: targets whose DPAS stops short of PVC's 8 rows
FEW_ROWS = {t.name: t for t in map(_dpas_rows_at_most, (4, 2, 1))}

#: the GEMM's signature and constants, as ops.matmul launches it (f16 in, f32 out)
SIGNATURE = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _constants(tiles: tuple[int, int, int]) -> dict:
    bm, bn, bk = tiles
    return dict(TA=False, TB=False, HAS_BIAS=False, ACT=0, ACC=xt.float32, OUT=xt.float32, BM=bm, BN=bn, BK=bk)


@pytest.fixture(params=sorted(NEW_TARGETS))
def new_target(request, monkeypatch, tmp_path) -> Target:
    """One of the new targets, registered for the test, with a kernel cache of its own (so
    that every test compiles what it checks)."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    with register_target(NEW_TARGETS[request.param]) as target:
        yield target


@pytest.fixture(params=sorted(FEW_ROWS, reverse=True))
def few_rows(request, monkeypatch, tmp_path) -> Target:
    """A target of fewer DPAS rows than PVC, registered for the test, with a kernel cache
    of its own."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    with register_target(FEW_ROWS[request.param]) as target:
        yield target


@pytest.fixture
def m4(monkeypatch, tmp_path) -> Target:
    """The 4-row DPAS target, registered for the test, with a kernel cache of its own."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    with register_target(FEW_ROWS["m4"]) as target:
        yield target


def _callees(llvm_text: str) -> set[str]:
    return set(re.findall(r'call [^@]*@"?([\w.]+)', llvm_text))


def test_a_registered_target_is_reachable_under_every_name(new_target, monkeypatch):
    name = new_target.name
    assert compile_target(name).gpu is new_target and not compile_target(name).emulate
    assert compile_target(f"cpu-{name}").gpu is new_target and compile_target(f"cpu-{name}").emulate
    monkeypatch.setenv("XETILE_CPU_FLAVOUR", name)
    assert cpu_device.flavour() == name
    # the ops' tiles: the rule's, from the target's own DPAS facts (it declares none)
    assert configs.gemm_tiles(f"cpu-{name}", "float16") == dict(OpTiles.rule_for(new_target).gemm)["float16"]
    assert configs.row_tiles(f"cpu-{name}") == (32 // new_target.subgroup_size, 256)


def test_unregistered_the_names_are_gone():
    with register_target(replace(PVC, name="passing")):
        assert "passing" in target_aliases()
    assert "passing" not in target_aliases()
    with pytest.raises(UsageError, match="unknown target 'passing'"):
        compile_target("passing")


def test_gemm_compiles_for_the_new_facts_and_runs_on_the_cpu_device(new_target):
    cpu = f"cpu-{new_target.name}"
    f16 = new_target.dpas_for("f16", "f16")
    # a 64-row tile: PVC reads its A in coalesced 32-row 2D blocks and writes C in 8-row ones
    kernels = {t: xd.compile(matmul_kernel, SIGNATURE, _constants((64, 32, 32)), target=t) for t in ("cpu-pvc", cpu)}
    # DPAS results are the new target's M x N (N = its lanes)
    results = set(re.findall(r"xegpu\.dpas [^\n]*-> vector<(\d+)x(\d+)xf32>", kernels[cpu].asm["xegpu"]))
    assert results == {(str(f16.m), str(new_target.subgroup_size))}
    reads, writes = {}, {}
    for t, kernel in kernels.items():
        callees = " ".join(_callees(kernel.asm["llvm"]))
        reads[t] = {int(r) for r in re.findall(r"2d_block_read_16b_(\d+)r", callees)}
        writes[t] = {int(r) for r in re.findall(r"2d_block_write_32b_(\d+)r", callees)}
    assert max(reads["cpu-pvc"]) == 32 and writes["cpu-pvc"] == {8}
    if new_target.has_2d_block_io:
        # coalesced reads stop at the new 16-row limit; the 8-row C blocks are no 2D block
        # write of at most 4 rows: written per lane
        assert max(reads[cpu]) == max(r for s in new_target.block2d_read if s.elem_bits == 16 for r in s.rows) == 16
        assert not writes[cpu]
    else:
        assert not reads[cpu] and not writes[cpu]

    rng = np.random.default_rng(2024)
    a = rng.standard_normal((40, 72)).astype(np.float16)     # edges in M, N and K
    b = rng.standard_normal((72, 50)).astype(np.float16)
    c = ops.matmul(a, b, out_dtype=np.float32, target=cpu)
    ref, bound = exact_products_matmul(a, b)   # f16 products exact in f32, f32 sums: (K + 1) 2^-24 |a||b|
    assert excess(c, ref, bound) <= 1.0


def _softmax_bound(y: np.ndarray, n: int) -> np.ndarray:
    """|f16 softmax - exact| for the kernel's f32 online softmax over ``n`` columns: the
    f32 exp, sums and rescales (a few ulps each, ``n + 8`` operations on a term's path,
    4 ulps allowed each: (n + 8) 2^-22 relative) and the f16 rounding of the result
    (2^-11 relative, 2^-25 absolute for the subnormals)."""
    return y * ((n + 8) * 2.0**-22 + 2.0**-11) + 2.0**-25


def test_softmax_runs_on_the_cpu_device(new_target):
    _check_softmax(f"cpu-{new_target.name}")


def _check_softmax(cpu: str) -> None:
    """ops.softmax on ``cpu`` against numpy, within :func:`_softmax_bound`."""
    rng = np.random.default_rng(7)
    for n in (300, 7):    # two chunks (the second partial), and rows narrower than a 2D block
        x = (rng.standard_normal((5, n)) * 3 + 1).astype(np.float16)
        y = ops.softmax(x, target=cpu)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        assert y.dtype == np.float16
        assert (np.abs(y.astype(np.float64) - ref) <= _softmax_bound(ref, n)).all()


# --- fewer DPAS rows -------------------------------------------------------------------
def _dpas_types(xegpu_text: str) -> set[tuple[str, ...]]:
    """(A, accumulator, result) vector shapes of every xegpu.dpas of an XeGPU text (B is
    its VNNI image, K/2 x N x 2)."""
    shapes = [re.findall(r"vector<([\dx]+)x\w+>", line) for line in xegpu_text.splitlines() if "xegpu.dpas " in line]
    return {(a, c, r) for a, _, c, r in shapes}


def test_the_dpas_rows_are_a_target_fact():
    """``Target.dpas_m``: the largest repeat count of a target's DPAS flavours (8 on every
    built-in target), ``BLOCK_ROWS_WITHOUT_DPAS`` on a target without DPAS."""
    assert {t.dpas_m for t in TARGETS.values()} == {8}
    assert [FEW_ROWS[name].dpas_m for name in ("m4", "m2", "m1")] == [4, 2, 1]
    assert replace(PVC, name="nodpas", dpas=()).dpas_m == BLOCK_ROWS_WITHOUT_DPAS == 8
    assert all(t.dpas_rows_problem() is None for t in (*TARGETS.values(), *FEW_ROWS.values()))


@xd.jit
def _scale(x, y):
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [16, 32])) * 2.0, xt.init_tile(y, [0, 0], [16, 32]))


def test_tiles_that_are_no_dpas_operand_are_blocked_in_the_targets_dpas_rows():
    """A 16x32 f32 tile loaded, scaled and stored: 4x16 blocks on the 4-row target,
    :data:`BLOCK_ROWS_WITHOUT_DPAS` rows on a target without DPAS (PVC's 8)."""
    nodpas = replace(PVC, name="nodpas", dpas=(), op_tiles=None, cpu_flavour=True)
    for target, rows in ((FEW_ROWS["m4"], 4), (nodpas, BLOCK_ROWS_WITHOUT_DPAS), (PVC, 8)):
        with register_target(target) if target is not PVC else nullcontext():
            xegpu = xd.compile(_scale, {"x": "f32[:,:]", "y": "f32[:,:]"}, target=f"cpu-{target.name}").asm["xegpu"]
        assert set(re.findall(r"vector<(\d+)x16xf32>", xegpu)) == {str(rows)}, target.name


@pytest.mark.parametrize("trans_a", [False, True], ids=["A", "At"])
def test_gemm_runs_with_fewer_dpas_rows(few_rows, trans_a):
    """ops.matmul (A or A^T stored, f16 into f32, M, N and K off the tiles) on the CPU
    device: every DPAS repeats the target's M rows (A, C and result blocks M x 16), and C
    matches numpy within the f32 accumulation's bound."""
    cpu, m = f"cpu-{few_rows.name}", few_rows.dpas_m
    rng = np.random.default_rng(11)
    a = rng.standard_normal((40, 72)).astype(np.float16)
    b = rng.standard_normal((72, 50)).astype(np.float16)
    tiles = configs.gemm_tiles(cpu, "float16", a.shape[0], trans_a)
    kernel = xd.compile(matmul_kernel, SIGNATURE, {**_constants(tiles), "TA": trans_a}, target=cpu)
    assert _dpas_types(kernel.asm["xegpu"]) == {(f"{m}x16", f"{m}x16", f"{m}x16")}
    c = ops.matmul(np.ascontiguousarray(a.T) if trans_a else a, b, trans_a=trans_a, out_dtype=np.float32, target=cpu)
    ref, bound = exact_products_matmul(a, b)   # f16 products exact in f32, f32 sums: (K + 1) 2^-24 |a||b|
    assert excess(c, ref, bound) <= 1.0


def test_the_machine_code_repeats_4_rows(m4, ocloc_path):
    """Built for the GPU (PVC's ocloc device), the GEMM's DPAS are ``dpas.8x4``: systolic
    depth 8, repeat count 4 (PVC's are 8x8), and nothing spills."""
    for trans_a in (False, True):
        tiles = configs.gemm_tiles("m4", "float16", trans_a=trans_a)
        kernel = xd.compile(matmul_kernel, SIGNATURE, {**_constants(tiles), "TA": trans_a}, target="m4")
        assert set(re.findall(r"\bdpas\.(\d+x\d+)", kernel.asm["isa"])) == {"8x4"}
        assert kernel.asm["zebin"].execution_env("matmul_kernel").get("spill_size", 0) == 0


def test_the_workgroup_gemm_runs_with_4_row_dpas(m4):
    """kernels/gemm_wg.py's GEMM (its CPU-device tile: 4 x 2 subgroups of 16x32) on the
    4-row target, M, N and K off the tiles."""
    cpu = "cpu-m4"
    tile = gemm_wg.gemm_tile_for(cpu)
    constants = {**tile.constants(), "BK": tile.bk(m4.dpas_for("f16", "f16").k), "ACC": xt.float32}
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    xegpu = xd.compile(gemm_wg.gemm_wg_kernel, sig, constants, target=cpu).asm["xegpu"]
    assert _dpas_types(xegpu) == {("4x16", "4x16", "4x16")}
    rng = np.random.default_rng(5)
    a = rng.standard_normal((100, 96)).astype(np.float16)
    b = rng.standard_normal((96, 70)).astype(np.float16)
    c = gemm_wg.gemm_wg(a, b, target=cpu)
    ref, bound = exact_products_matmul(a, b)   # f16 products exact in f32, f32 sums: (K + 1) 2^-24 |a||b|
    assert excess(c, ref, bound) <= 1.0


def test_softmax_runs_in_4_row_blocks(m4):
    """A softmax program's 8 rows are two 4-row blocks on the 4-row target (PVC: one of 8):
    the f32 values 4 x 16, the row statistics 4 x 1; the result matches numpy."""
    bm, bc = configs.row_tiles("cpu-m4")
    assert bm == 8
    sig = {"x": "f16[:,:]", "y": "f16[:,:]", "N": "i32"}
    xegpu = xd.compile(softmax_kernel, sig, {"OUT": xt.float16, "BM": bm, "BC": bc}, target="cpu-m4").asm["xegpu"]
    assert {r for r, _ in re.findall(r"vector<(\d+)x(16|1)xf32>", xegpu)} == {"4"}
    _check_softmax("cpu-m4")


@xd.jit
def _slm_copy(x, y, R: xt.constexpr):
    buf = xt.slm_alloc([R, 16], xt.float32)
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [16, 16])), xt.init_tile(buf, [0, 0], [16, 16]))
    xt.barrier()
    xt.store_tile(xt.load_tile(xt.init_tile(buf, [0, 0], [16, 16])), xt.init_tile(y, [0, 0], [16, 16]))


def test_the_new_slm_size_is_the_limit(new_target):
    """A buffer of PVC's SLM compiles for PVC and is refused on the new target, whose
    error names its own size."""
    rows = PVC.slm_bytes // (16 * 4)
    xd.compile(_slm_copy, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"R": rows}, target="cpu-pvc")
    with pytest.raises(CompilationError, match=f"{new_target.name} has {new_target.slm_bytes} B per workgroup"):
        xd.compile(_slm_copy, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"R": rows}, target=f"cpu-{new_target.name}")


def test_facts_the_compiler_cannot_honour_are_refused_at_registration():
    # f16 repeating at most 4 rows, the others 8: accumulators have one row count per target
    mixed = tuple(replace(c, m_values=(1, 2, 4)) if c.a_type == "f16" else c for c in PVC.dpas)
    with pytest.raises(UsageError, match=r"largest repeat counts .* differ \(f16xf16: 4; bf16xbf16, .*: 8\)"):
        register_target(replace(PVC, name="mixed", dpas=mixed))
    assert "mixed" not in target_aliases()
    with pytest.raises(UsageError, match="stricter than the launch's narrow-row rule"):
        register_target(replace(PVC, name="wide_rows", block2d_limits=replace(PVC.block2d_limits, min_width_bytes=128)))
    with pytest.raises(UsageError, match="is taken"):
        register_target(replace(PVC, name="arc"))


def test_the_cache_key_carries_a_registered_targets_facts():
    """One name registered twice with other facts never shares kernels: the key's target
    part is the name plus the registered facts (a built-in target's part is its name, its
    facts being in the compiler's sources the key stamps)."""
    assert launch_facts.target_key_part("cpu-pvc") == "cpu-pvc"
    parts = []
    for slm in (64 * 1024, 32 * 1024):
        with register_target(replace(WIDE16, name="twice", slm_bytes=slm)):
            parts.append([launch_facts.target_key_part(t) for t in ("twice", "cpu-twice", "interpret-twice")])
    assert parts[0] != parts[1] and all(p.startswith(("twice\n", "cpu-twice\n", "interpret-twice\n")) for p in parts[0])
    assert launch_facts.target_key_part("twice") == "twice"          # unregistered: no facts left behind
