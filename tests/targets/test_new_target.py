"""Adding a target is one ``Target`` entry: two GPUs that exist nowhere but here are
defined in this file, registered with ``targets.register_target`` and, touching no other
file, a GEMM (``ops.matmul``) and a softmax (``ops.softmax``) are compiled for them and
run on the CPU device (their ``cpu-<name>`` flavour), checked against numpy with bounds
derived from the arithmetic.  The IR shows that the new facts were the ones obeyed:

* ``wide16``: PVC's ISA with half its SLM, 2D block reads of at most 16 rows (PVC: 32)
  and 2D block writes of at most 4 rows (PVC: 8), so the GEMM's 8-row result blocks
  cannot be written as 2D blocks and its coalesced reads stop at 16 rows;
* ``narrow8``: ARC's 8-lane ISA (no 2D block IO) with a quarter of PVC's SLM: DPAS
  blocks 8 wide, the ops' tiles from the rule for a target that declares none.
"""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from f32_accumulate_ref import exact_products_matmul, excess
from xetile_dsl import ops
from xetile_dsl.errors import CompilationError, UsageError
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul import matmul_kernel
from xetile_dsl.targets import launch_facts
from xetile_dsl.targets import ARC, PVC, OpTiles, Target, compile_target, cpu_device, register_target, target_aliases


def _rows_at_most(shapes, rows: int):
    """The 2D block shapes ``shapes`` with no more than ``rows`` rows."""
    return tuple(replace(s, rows=tuple(r for r in s.rows if r <= rows)) for s in shapes if min(s.rows) <= rows)


WIDE16 = replace(
    PVC, name="wide16", slm_bytes=64 * 1024, gemm_tiles=PVC.gemm_tiles[-1:], op_tiles=None, cpu_flavour=True,
    block2d_read=_rows_at_most(PVC.block2d_read, 16), block2d_prefetch=_rows_at_most(PVC.block2d_prefetch, 16),
    block2d_write=_rows_at_most(PVC.block2d_write, 4))
NARROW8 = replace(ARC, name="narrow8", slm_bytes=32 * 1024, op_tiles=None, cpu_flavour=True)
NEW_TARGETS = {t.name: t for t in (WIDE16, NARROW8)}

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
    cpu = f"cpu-{new_target.name}"
    rng = np.random.default_rng(7)
    for n in (300, 7):    # two chunks (the second partial), and rows narrower than a 2D block
        x = (rng.standard_normal((5, n)) * 3 + 1).astype(np.float16)
        y = ops.softmax(x, target=cpu)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
        assert y.dtype == np.float16
        assert (np.abs(y.astype(np.float64) - ref) <= _softmax_bound(ref, n)).all()


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
    four_rows = tuple(replace(c, m_values=(1, 2, 4)) for c in PVC.dpas if c.a_type != "tf32")
    with pytest.raises(UsageError, match="DPAS of at most 4 rows"):
        register_target(replace(PVC, name="m4", dpas=four_rows))
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
