"""The GEMMs' machine code, statically: one ISA report (``CompiledKernel.report()``) per
shape, as one table of the hot K loop (needs ocloc; no GPU).

    python benchmarks/gemm_isa.py [--target pvc] [--dtype f16 ...] [--layout AB ...] [--plot [FILE.png]]

Shapes: f16, bf16 and int8 inputs (f32 / i32 accumulators); 256x256 and 128x256
workgroup tiles; C = A.B, A.Bt, At.B, At.Bt (a transposed operand is stored row-major
and read through an ``order=(0, 1)`` tile, as in kernels/gemm_transposed.py); M = 1, 16, 64,
4096 with N = K = 4096 (K is specialised as the JIT would for 4096: divisible by 16).

The kernel is ``gemm_wg_kernel`` (kernels/gemm_wg.py) for A.B and
``kernels/gemm_wg.py``'s :func:`gemm_wg_layout_kernel` for the transposed layouts.  Workgroup shape per M:
the tile's rows are min(BM, max(M, 8)) (a DPAS multiplies 8 rows: M = 1 runs an 8-row
tile whose rows past M load as zeros and are not stored); subgroups are [SM, SN] with SM = rows / 32 (at least 1)
and SN = BN / 16 at most, 32 subgroups at most, and no more subgroups than tile rows
(gemm_wg splits the A prefetch by rows among all subgroups).  So M <= 128 gives the same
kernel for both tiles (compiled once).  A shape that does not compile shows the reason
in its row.  ``--plot`` draws the hot loop's instructions per DPAS (needs matplotlib).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.frontend.ast_to_xetile import ArgSpec
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel, gemm_wg_layout_kernel
from xetile_dsl.targets import TARGETS

#: input dtype -> (signature dtype, C dtype, accumulator, BK = two DPAS K steps)
DTYPES = {"f16": ("f16", "f32", xt.float32, 32), "bf16": ("bf16", "f32", xt.float32, 32),
          "int8": ("i8", "i32", xt.int32, 64)}
#: layout -> (A stored transposed, B stored transposed)
LAYOUTS = {"AB": (False, False), "ABt": (False, True), "AtB": (True, False), "AtBt": (True, True)}
TILES = ((256, 256), (128, 256))
MS = (1, 16, 64, 4096)
N = K = 4096

COLUMNS = ("instr", "dpas", "runs", "ld2d", "pf2d", "gath", "slm", "sync", "spill", "GRF", "cycles", "i/dpas")




def workgroup(m: int, bm: int, bn: int) -> tuple[int, int, int]:
    """(tile rows, SM, SN) for problem rows ``m`` and workgroup tile ``bm x bn`` (module doc)."""
    rows = min(bm, max(m, 8))
    sm = max(1, rows // 32)
    sn = min(bn // 16, 32 // sm, max(1, rows // sm))
    return rows, sm, sn


def compile_report(dtype: str, layout: str, rows: int, bn: int, sm: int, sn: int, target: str = "pvc"):
    """The ISA report of one shape, or the reason it has none (a string)."""
    elem, c_type, acc, bk = DTYPES[dtype]
    ta, tb = LAYOUTS[layout]
    sig = {"a": f"{elem}[:,:]", "b": f"{elem}[:,:]", "c": f"{c_type}[:,:]", "K": ArgSpec("scalar", "i32", spec="d16")}
    consts = {"BM": rows, "BN": bn, "BK": bk, "SM": sm, "SN": sn, "PF": 3, "ACC": acc}
    kernel = gemm_wg_kernel
    if ta or tb:
        kernel, consts = gemm_wg_layout_kernel, {**consts, "TA": ta, "TB": tb}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = xd.compile(kernel, sig, consts, target=target).report()
    except Exception as exc:  # noqa: BLE001 -- a shape that does not compile is a row of the table
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"{type(exc).__name__}: {first.split(' error: ', 1)[-1][:160]}"
    notes = sorted({type(w.message).__name__ for w in caught if isinstance(w.message, CompilationWarning)})
    return report, notes


def dpas_per_k_step(dtype: str, rows: int, bn: int, sm: int, sn: int, target: str = "pvc") -> int:
    """DPAS instructions one subgroup issues per K step (8-row DPAS, the target's N and K)."""
    elem = DTYPES[dtype][0]
    shape = TARGETS[target].dpas_for(elem, elem)
    return (rows // sm // 8) * (bn // sn // shape.n) * (DTYPES[dtype][3] // shape.k)


def row_cells(result, per_step: int = 0) -> tuple[list[str], str]:
    """The table cells of one report (or blanks and the reason); ``per_step`` (DPAS per K
    step) notes loops that run several K steps per trip (xegpu-rotate-loads)."""
    if isinstance(result, str):
        return ["-"] * len(COLUMNS), result
    report, notes = result
    hot = report.hot
    if hot is None:
        return ["-"] * len(COLUMNS), "no loop"
    dpas_loops = sum(1 for lp in report.loops if lp.dpas)
    if dpas_loops > 1:
        notes = notes + [f"{dpas_loops} dpas loops, first shown"]
    if per_step and hot.dpas > per_step and hot.dpas % per_step == 0:
        steps = hot.dpas // per_step
        notes = notes + [f"{steps} K steps per trip: {hot.instructions / steps:.1f} instr per K step"]
    c = hot.counts
    per = f"{hot.instructions_per_dpas:.1f}" if hot.instructions_per_dpas else "-"
    cells = [hot.instructions, hot.dpas, hot.dpas_runs, c["load2d"], c["prefetch"], c["gather"] + c["scatter"],
             c["slm"], c["sync"], report.spill_bytes, report.grf_mode, f"{hot.cycle_bound:.0f} {hot.bound_by}", per]
    return [str(x) for x in cells], ", ".join(notes)


def plot(rows: list[tuple[str, object]], path: str, target: str = "pvc") -> None:
    """Bar chart of the hot loop's instructions per DPAS, one bar per shape."""
    try:
        import matplotlib
    except ImportError:
        print("--plot needs matplotlib (pip install matplotlib); table printed without the chart",
              file=sys.stderr)
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [(name, r[0].hot.instructions_per_dpas) for name, r in rows
            if not isinstance(r, str) and r[0].hot and r[0].hot.instructions_per_dpas]
    fig, ax = plt.subplots(figsize=(max(8, len(bars) * 0.3), 5))
    ax.bar(range(len(bars)), [v for _, v in bars])
    ax.set_xticks(range(len(bars)), [n for n, _ in bars], rotation=90, fontsize=7)
    ax.set_ylabel("hot-loop instructions per DPAS")
    ax.set_title(f"xetile_dsl GEMM hot K loop on {target} (ocloc)")
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="pvc", choices=list(TARGETS),
                    help="GPU target whose machine code is read (default pvc)")
    ap.add_argument("--dtype", action="append", choices=list(DTYPES), help="only these input dtypes")
    ap.add_argument("--layout", action="append", choices=list(LAYOUTS), help="only these layouts")
    ap.add_argument("--plot", nargs="?", const="gemm_isa.png", default=None, metavar="FILE.png",
                    help="also draw hot-loop instructions per DPAS (default file gemm_isa.png)")
    args = ap.parse_args()
    cache: dict[tuple, object] = {}
    rows: list[tuple[str, object]] = []
    print(f"GEMM hot K loop, {args.target}, N = K = {N}; cycles = lower bound per iteration (docs/tools.md, 'The ISA report')")
    print(f"| {'shape':<30} | " + " | ".join(COLUMNS) + " | notes |")
    print("|" + "---|" * (len(COLUMNS) + 2))
    t0 = time.perf_counter()
    for dtype in args.dtype or DTYPES:
        for layout in args.layout or LAYOUTS:
            for bm, bn in TILES:
                for m in MS:
                    rows_, sm, sn = workgroup(m, bm, bn)
                    key = (dtype, layout, rows_, bn, sm, sn, args.target)
                    if key not in cache:
                        cache[key] = compile_report(*key)
                    name = f"{dtype} {layout} {bm}x{bn} M={m} [{sm},{sn}]x{rows_ // sm}x{bn // sn}"
                    cells, notes = row_cells(cache[key], dpas_per_k_step(dtype, rows_, bn, sm, sn, args.target))
                    rows.append((name, cache[key]))
                    print(f"| {name:<30} | " + " | ".join(cells) + f" | {notes} |", flush=True)
    print(f"{len(cache)} kernels compiled in {time.perf_counter() - t0:.0f} s")
    if args.plot:
        plot(rows, args.plot, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
