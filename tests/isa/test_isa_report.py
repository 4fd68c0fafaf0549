"""The static ISA report (``CompiledKernel.report()``, ``python -m xetile_dsl explain``).

The listing parser is tested on handwritten IGA lines (no ocloc); the report of a small
GEMM is checked against the kernel's tile math and against the listing counted with
plain regular expressions, and the CLI against the API.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import xetile_dsl as xd
from conftest_tools import require_ocloc
from xetile_dsl.errors import ToolError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.targets import get_target
from xetile_dsl.tools import isa as listing
from xetile_dsl.tools.isa_report import IsaReport, isa_report

PVC = get_target("pvc")

DPAS = "        dpas.8x8 (16|M0)         r33:f         r33:f             r23:hf            r14.0:hf         {Atomic}"
LOAD2D = ("        send.ugm (1|M0)          r6       r4      null:0  0x0            0x02800283           {$3} "
          "// wr:1+0, rd:8; load_block2d.ugm.d16v.a64")
PREFETCH = ("        send.ugm (1|M0)          null     r5      null:0  0x0            0x02080203           {$8} "
            "// wr:1+0, rd:0; load_block2d.ugm.d16.a64.ca.ca")
GATHER = ("        send.ugm (16|M0)         r12      r20     null:0  0x0            0x04100580           {$2} "
          "// wr:2+0, rd:1; load.ugm.d32.a64")
BLOCK1D = ("(W)     send.ugm (1|M0)          r1       r255    null:0  0xFF000000            0x6228E500           "
           "{A@1,$0} // wr:1+0, rd:2; load.ugm.d32x32t.a32.ca.ca.bti[255]")
SLM = ("        send.slm (16|M0)         r30      r40     null:0  0x0            0x04100500           {$4} "
       "// wr:2+0, rd:1; load.slm.d16u32.a32")
SIGNAL = "(W)     send.gtwy (1|M0)         null     r9      null:0  0x0            0x02000004           {$5} // wr:1+0, rd:0; signal barrier"
SYNC = "        sync.bar                             0x0"
MOV = "(W)     mov (1|M0)               r4.7<1>:ud    0x70F:uw"


# --- the listing parser, no ocloc ----------------------------------------------------

@pytest.mark.parametrize("line, kind", [
    (DPAS, "dpas"), (LOAD2D, "load2d"), (PREFETCH, "prefetch"), (GATHER, "gather"), (BLOCK1D, "block1d"),
    (SLM, "slm"), (SIGNAL, "sync"), (SYNC, "sync"), (MOV, "other"),
    ("(W&f0.0) jmpi                                L1472", "other"),
])
def test_classifier(line, kind):
    assert listing.parse_line(line).kind == kind


def test_labels_comments_and_padding_are_not_instructions():
    assert [listing.parse_line(s) for s in ("L3320:", "// a comment", "", "illegal")] == [None] * 4


def test_send_fields_and_dpas_work():
    load = listing.parse_line(LOAD2D)
    assert (load.dst, load.operands[1], load.message, load.response_grfs) == ("r6", "r4", "load_block2d.ugm.d16v.a64", 8)
    # dpas.8x8 of f16 on 16 lanes: 8 rows x 16 columns x K 16 (8 dwords of two halves)
    assert listing.dpas_work(listing.parse_line(DPAS)) == ("f16", 8 * 16 * 16)
    int8 = DPAS.replace(":hf", ":b")
    assert listing.dpas_work(listing.parse_line(int8)) == ("i8", 8 * 16 * 32)


def test_block_shape_follows_the_payload():
    """dword 7 of the payload = (W-1) | (H-1) << 8 | (N-1) << 16, set through a qword
    immediate, copied with the whole header, as a denormal float, or lost to arithmetic."""
    text = "\n".join([
        "(W)     mov (1|M0)               r4.3<1>:uq    0x1F0F00000000:uq",         # dwords 6, 7
        LOAD2D,                                                                    # payload r4
        "(W)     mov (8|M0)               r5.0<1>:f     r4.0<1;1,0>:f                    {Compacted}",
        PREFETCH,                                                                  # payload r5
        "(W)     mov (1|M0)               r4.7<1>:f     1.02977e-40:f",             # 0x11F0F
        LOAD2D.replace("d16v", "d16"),
        "(W)     add (1|M0)               r5.7<1>:d     r5.7<0;1,0>:d     1:w",
        PREFETCH,
    ])
    shapes = listing.block_shapes(text, grf_bytes=64)
    assert [str(s) if s else None for s in shapes.values()] == [
        "16b 32r16x1c vnni", "16b 32r16x1c", "16b 32r16x2c", None]


def test_innermost_loops_and_hot_loop():
    text = "\n".join(["L0:", MOV, "L1:", DPAS, "(W&f0.1) jmpi L1", MOV, "(W&f0.0) jmpi L0",
                      "L2:", GATHER, GATHER, "(W&f0.0) jmpi L2"])
    assert [(lp.label, lp.start, lp.end) for lp in listing.innermost_loops(text)] == [("L1", 2, 4), ("L2", 7, 10)]
    assert listing.hot_loop(text).splitlines()[0] == "L0:"


def test_k_loop_around_cold_loops_is_reported_whole():
    """ARC's K loop holds the cold per-lane loops of its edge blocks: the report's hot
    loop is the K loop with them (its DPAS and every message), not a cold loop."""
    text = "\n".join(["L0:", DPAS, "L1:", GATHER, "(W&f0.1) jmpi L1", DPAS, "(W&f0.0) jmpi L0"])
    rep = isa_report(text, "k", PVC, {"grf_count": 256, "spill_size": 0, "simd_size": 16})
    assert [lp.label for lp in rep.loops] == ["L0", "L1"]
    assert (rep.hot.label, rep.hot.dpas, rep.hot.counts["gather"]) == ("L0", 2, 1)


def test_report_of_a_handwritten_loop():
    """Two back-to-back dpas, a load, a dpas: 3 x 8 XMX clocks > 6 instructions."""
    text = "\n".join(["L9:", MOV, DPAS, DPAS, LOAD2D, DPAS, "(W&f0.0) jmpi L9"])
    rep = isa_report(text, "k", PVC, {"grf_count": 256, "spill_size": 0, "simd_size": 16})
    hot = rep.hot
    assert (hot.instructions, hot.dpas, hot.counts["load2d"], hot.counts["other"]) == (6, 3, 1, 2)
    assert (hot.dpas_runs, hot.longest_dpas_run) == (2, 2)
    assert hot.load2d_shapes == {"16b 8r16x1c vnni": 1}  # MOV sets r4's shape dword to 0x70F
    assert (hot.dpas_cycles, hot.issue_cycles, hot.cycle_bound, hot.bound_by) == (24, 6, 24, "dpas")
    assert IsaReport.from_json(rep.to_json()) == rep


def test_skipped_lines_and_the_short_path():
    """A flag-predicated forward jmpi/goto to a label of the loop skips the lines up to it
    (a lazily run rescale); an exit to a label outside the loop and an unconditional
    (W) jump skip nothing.  The short path: 8 instructions (2 dpas) of 11."""
    text = "\n".join(["L9:", DPAS, "(W&~f0.1) jmpi L99", "(W&f0.0) jmpi L5", MOV, MOV, "L5:", DPAS,
                      "(~f1.0) goto (16|M0) L6 L6", MOV, "L6:", "join (16|M0) L7", "L7:", "(W) jmpi L8", "L8:",
                      "(W&f0.0) jmpi L9"])
    lines = text.splitlines()
    assert sorted(lines[i] for i in listing.skipped_lines(lines)) == sorted([MOV, MOV, MOV])
    hot = isa_report(text, "k", PVC, {"grf_count": 256, "spill_size": 0, "simd_size": 16}).hot
    assert (hot.instructions, hot.skippable, hot.skippable_dpas) == (11, 3, 0)
    assert hot.short_path_instructions_per_dpas == 8 / 2
    assert "without them 4.0 per dpas" in str(isa_report(text, "k", PVC, {}))


# --- a small GEMM through ocloc ------------------------------------------------------

BM, BN, BK = 32, 32, 16
CONSTS = {"BM": BM, "BN": BN, "BK": BK}
SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


@pytest.fixture(scope="module")
def gemm():
    """(kernel, report) of the subgroup GEMM for pvc, compiled once."""
    require_ocloc()
    kernel = xd.compile(matmul_kernel, SIG, CONSTS, target="pvc")
    return kernel, kernel.report()


def _covered_bytes(shapes: dict[str, int]) -> int:
    """Bytes the 2D blocks of ``shapes`` cover ("16b 8r16x1c" x n)."""
    total = 0
    for text, n in shapes.items():
        bits, rows, cols, count = map(int, re.match(r"(\d+)b (\d+)r(\d+)x(\d+)c", text).groups())
        total += n * rows * cols * count * bits // 8
    return total


def test_gemm_report_matches_the_tile_math(gemm):
    kernel, rep = gemm
    hot = rep.hot
    assert hot.dpas == (BM // 8) * (BN // 16) * (BK // 16)  # one dpas.8x8 per 8x16 C block and K step
    assert hot.dpas_cycles == BM * BN * BK / 256  # the K step's MACs at PVC's 256 f16 MACs per clock
    # one K step loads the A tile (BM x BK) and the B tile (BK x BN), f16, in legal shapes
    assert _covered_bytes(hot.load2d_shapes) == (BM * BK + BK * BN) * 2
    assert _covered_bytes(hot.prefetch_shapes) == BM * BK * 2  # the kernel prefetches A
    for text in hot.load2d_shapes:
        bits, rows, cols, count = map(int, re.match(r"(\d+)b (\d+)r(\d+)x(\d+)c", text).groups())
        kind = "read_transform" if text.endswith("vnni") else "read"
        assert PVC.find_block2d(kind, bits, rows, cols, count) is not None, text
    assert (rep.grf_mode, rep.spill_bytes, rep.simd) == (128, 0, 16)
    assert rep.grf_mode == kernel.asm["zebin"].execution_env(kernel.abi.kernel_name)["grf_count"]


def test_gemm_report_matches_a_regex_count_of_the_listing(gemm):
    kernel, rep = gemm
    loop = listing.hot_loop(kernel.asm["isa"])
    hot = rep.hot
    assert hot.dpas == len(re.findall(r"^\s*dpas\.8x8 ", loop, re.M))
    assert hot.counts["load2d"] == len(re.findall(r"^\s*send\S* \(1\|M0\)\s+r\d+ .*load_block2d", loop, re.M))
    assert hot.counts["prefetch"] == len(re.findall(r"^\s*send\S* \(1\|M0\)\s+null .*load_block2d", loop, re.M))
    assert sum(n for s, n in hot.load2d_shapes.items() if s.endswith("vnni")) == len(re.findall(r"load_block2d\.ugm\.d16v", loop))
    labels_and_blank = len(re.findall(r"^\s*(?:[A-Za-z_.$][\w.$]*:\s*)?$", loop, re.M))
    assert hot.instructions == len(loop.splitlines()) - labels_and_blank == hot.issue_cycles


def test_gemm_report_json_round_trip_and_table(gemm):
    _, rep = gemm
    again = IsaReport.from_json(rep.to_json())
    assert again == rep and json.loads(again.to_json()) == json.loads(rep.to_json())
    table = str(rep)
    assert "128-GRF mode" in table and "cycle bound" in table
    assert all(shape in table for shape in rep.hot.load2d_shapes)


def test_explain_cli_json_matches_the_api(gemm):
    _, rep = gemm
    src = Path(xd.__file__).parent / "kernels" / "matmul.py"
    argv = [sys.executable, "-m", "xetile_dsl", "explain", f"{src}:matmul_kernel", "--target", "pvc", "--json"]
    argv += [f"--const={k}={v}" for k, v in CONSTS.items()] + [f"--sig={k}={v}" for k, v in SIG.items()]
    proc = subprocess.run(argv, capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(rep.to_json())


def test_explain_cli_names_missing_signature_entries():
    src = Path(xd.__file__).parent / "kernels" / "matmul.py"
    proc = subprocess.run([sys.executable, "-m", "xetile_dsl", "explain", f"{src}:matmul_kernel", "--sig", "a=f16[:,:]"],
                          capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    assert proc.returncode == 1 and "missing --sig for b, c, K" in proc.stderr and "Traceback" not in proc.stderr


def test_explain_cli_imports_package_files_with_relative_imports_and_reports_broken_ones(tmp_path):
    """A kernel file inside a package is imported by its dotted name (its relative imports
    work, as in the library's own kernels/matmul.py); a file that fails to import is one
    error line, not a traceback."""
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "shapes.py").write_text("TILE = 32\n")
    (pkg / "kern.py").write_text("import xetile_dsl as xd\nimport xetile_dsl.language as xt\nfrom .shapes import TILE\n\n\n"
                                 "@xd.jit\ndef copy(a, c):\n"
                                 "    xt.store_tile(xt.load_tile(xt.init_tile(a, [0, 0], [TILE, TILE])), "
                                 "xt.init_tile(c, [0, 0], [TILE, TILE]))\n")
    (tmp_path / "broken.py").write_text("import no_such_module_for_explain\n")

    def explain(spec, *sig):
        return subprocess.run([sys.executable, "-m", "xetile_dsl", "explain", spec, *sig], capture_output=True,
                              text=True, env=os.environ.copy(), timeout=600)

    ok = explain(f"{pkg / 'kern.py'}:copy", "--sig", "a=f32[:,:]")  # stops at the missing --sig, after the import
    assert ok.returncode == 1 and "missing --sig for c" in ok.stderr and "Traceback" not in ok.stderr
    bad = explain(f"{tmp_path / 'broken.py'}:k")
    assert bad.returncode == 1 and "No module named 'no_such_module_for_explain'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_report_needs_a_gpu_target():
    kernel = xd.compile(matmul_kernel, SIG, CONSTS, target="cpu")
    with pytest.raises(ToolError, match="target='pvc'"):
        kernel.report()


def test_report_without_ocloc_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("XETILE_OCLOC", str(tmp_path / "absent"))
    kernel = xd.compile(matmul_kernel, SIG, CONSTS, target="pvc")
    assert "isa" not in kernel.asm
    with pytest.raises(ToolError, match="ocloc"):
        kernel.report()
