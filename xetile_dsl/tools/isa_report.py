"""The static ISA report: what each innermost loop of a kernel's machine code does per
iteration, and a lower bound on its clocks (``CompiledKernel.report()``,
``python -m xetile_dsl explain``).

Counts come from the IGA listing (tools/isa.py), the GRF mode, spill and SLM sizes from
the zebin's ``.ze_info``.  The cycle bound of one iteration of one hardware thread is the
larger of

* **dpas**: the multiply-accumulates of its dpas instructions over the EU's XMX rate
  (``Target.dpas_macs_per_clock``): a dpas.8x8 of f16 on PVC is 8 x 16 x 16 = 2048
  MACs at 256 per clock, 8 clocks;
* **issue**: its instruction count over the instructions a thread issues per clock
  (``Target.thread_issue_per_clock``; in-order issue, one per clock).

Latency, memory bandwidth and other threads are ignored: it is a floor, and which term
sets it tells whether the loop is DPAS-bound or bound by the work around the DPAS.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

from ..targets.target import Target
from . import isa as iga
from .zebin import Zebin

#: the short names of instruction classes in the text table
_SHORT = {"dpas": "dpas", "load2d": "2D loads", "prefetch": "2D prefetches", "store2d": "2D stores",
          "gather": "gathers", "scatter": "scatters", "block1d": "1D block msgs", "slm": "SLM msgs",
          "sync": "sync/barriers", "scratch": "scratch msgs", "send_other": "other sends",
          "other": "scalar/ALU other"}


@dataclass
class LoopReport:
    """One innermost loop, per iteration: ``counts`` by instruction class (tools/isa.py
    KINDS), the 2D block shapes of loads/prefetches/stores (``"16b 32r16x2c"`` -> number),
    back-to-back dpas runs, and the two terms of the cycle bound."""

    label: str
    line: int  # listing line of the loop's label (1-based)
    instructions: int
    counts: dict[str, int]
    dpas_runs: int
    longest_dpas_run: int
    load2d_shapes: dict[str, int] = field(default_factory=dict)
    prefetch_shapes: dict[str, int] = field(default_factory=dict)
    store2d_shapes: dict[str, int] = field(default_factory=dict)
    dpas_cycles: float = 0.0
    issue_cycles: float = 0.0
    #: instructions and dpas that conditional forward branches inside the loop can skip
    #: (tools/isa.py skipped_lines): an iteration taking them runs the rest only
    skippable: int = 0
    skippable_dpas: int = 0

    @property
    def dpas(self) -> int:
        return self.counts.get("dpas", 0)

    @property
    def cycle_bound(self) -> float:
        """Clocks per iteration at least: max(dpas, issue)."""
        return max(self.dpas_cycles, self.issue_cycles)

    @property
    def bound_by(self) -> str:
        """"dpas" when the XMX term sets the bound, else "issue"."""
        return "dpas" if self.dpas_cycles >= self.issue_cycles else "issue"

    @property
    def instructions_per_dpas(self) -> float | None:
        return self.instructions / self.dpas if self.dpas else None

    @property
    def short_path_instructions_per_dpas(self) -> float | None:
        """Instructions per dpas of an iteration that takes every skipping branch."""
        dpas = self.dpas - self.skippable_dpas
        return (self.instructions - self.skippable) / dpas if dpas else None

    def to_dict(self) -> dict:
        """Fields plus the derived bound, for JSON."""
        return {**asdict(self), "cycle_bound": self.cycle_bound, "bound_by": self.bound_by,
                "instructions_per_dpas": self.instructions_per_dpas,
                "short_path_instructions_per_dpas": self.short_path_instructions_per_dpas}


@dataclass
class IsaReport:
    """A kernel's ISA report: kernel-wide facts and its loops (innermost ones, and loops
    holding DPAS around cold loops without: :func:`~.isa.report_loops`), the hot loop
    (most dpas, then most instructions) first, the others in program order."""

    kernel: str
    target: str
    simd: int
    grf_mode: int
    spill_bytes: int
    slm_bytes: int
    instructions: int
    loops: list[LoopReport]
    #: array parameters read and written per lane (rows too narrow for 2D block messages)
    per_lane_arrays: list = field(default_factory=list)

    @property
    def hot(self) -> LoopReport | None:
        return self.loops[0] if self.loops else None

    def to_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "loops"},
                "loops": [lp.to_dict() for lp in self.loops]}

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> "IsaReport":
        """The report back from :meth:`to_json` (derived fields are recomputed)."""
        data = json.loads(text)
        names = set(LoopReport.__dataclass_fields__)
        loops = [LoopReport(**{k: v for k, v in lp.items() if k in names}) for lp in data.pop("loops")]
        return cls(**data, loops=loops)

    def __str__(self) -> str:
        head = (f"ISA report: {self.kernel} on {self.target} (SIMD{self.simd}, {self.grf_mode}-GRF mode, "
                f"spill {self.spill_bytes} B, SLM {self.slm_bytes} B, {self.instructions} instructions)")
        if self.per_lane_arrays:
            head += (f"\n  per-lane loads/stores for {', '.join(self.per_lane_arrays)}: rows narrower than 2D "
                     "block messages allow")
        if not self.loops:
            return head + "\n  no loops"
        return "\n".join([head] + [_loop_text(lp, i == 0) for i, lp in enumerate(self.loops)])


def _shapes_text(shapes: dict[str, int]) -> str:
    return ", ".join(f"{n} x {shape}" for shape, n in sorted(shapes.items(), key=lambda kv: -kv[1]))


def _loop_text(lp: LoopReport, hot: bool) -> str:
    """The text table of one loop."""
    rows = [f"loop {lp.label} (line {lp.line}{', hot' if hot else ''}): {lp.instructions} instructions per iteration"]
    details = {"load2d": lp.load2d_shapes, "prefetch": lp.prefetch_shapes, "store2d": lp.store2d_shapes}
    for kind in iga.KINDS:
        n = lp.counts.get(kind, 0)
        if not n and kind not in ("dpas", "load2d", "other"):
            continue
        note = _shapes_text(details.get(kind, {}))
        if kind == "dpas" and n:
            note = f"{lp.dpas_runs} back-to-back runs, longest {lp.longest_dpas_run}"
        rows.append(f"  {_SHORT[kind]:<17}{n:>6}  {note}".rstrip())
    per = f"{lp.instructions_per_dpas:.1f}" if lp.instructions_per_dpas else "-"
    rows.append(f"  {'cycle bound':<17}{lp.cycle_bound:>6.0f}  per iteration, {lp.bound_by}-bound "
                f"(dpas {lp.dpas_cycles:.0f}, issue {lp.issue_cycles:.0f}); {per} instructions per dpas")
    if lp.skippable and lp.short_path_instructions_per_dpas:
        rows.append(f"  {'branches skip':<17}{lp.skippable:>6}  instructions; without them "
                    f"{lp.short_path_instructions_per_dpas:.1f} per dpas")
    return "\n".join(rows)


def _dpas_runs(kinds: list[str]) -> list[int]:
    """Lengths of the maximal runs of consecutive dpas."""
    runs, run = [], 0
    for kind in kinds + [""]:
        if kind == "dpas":
            run += 1
        elif run:
            runs.append(run)
            run = 0
    return runs


def loop_report(loop: iga.Loop, shapes: dict[int, iga.BlockShape | None], target: Target) -> LoopReport:
    """The report of one loop; ``shapes`` maps listing line index -> 2D block shape."""
    lines = loop.text.splitlines()
    parsed = [(loop.start + i, ins) for i, ln in enumerate(lines) if (ins := iga.parse_line(ln)) is not None]
    kinds = [ins.kind for _, ins in parsed]
    by_kind = {k: Counter() for k in ("load2d", "prefetch", "store2d")}
    for idx, ins in parsed:
        if ins.kind in by_kind:
            shape = shapes.get(idx)
            by_kind[ins.kind][str(shape) if shape else f"? ({ins.message})"] += 1
    macs: Counter = Counter()
    for _, ins in parsed:
        if ins.kind == "dpas":
            a_type, n = iga.dpas_work(ins)
            macs[a_type] += n
    dpas_cycles = sum(target.dpas_cycles(t, n) or 0.0 for t, n in macs.items())
    runs = _dpas_runs(kinds)
    skip = iga.skipped_lines(lines)
    skipped = [ins for idx, ins in parsed if idx - loop.start in skip]
    return LoopReport(loop.label, loop.start + 1, len(parsed), {k: kinds.count(k) for k in iga.KINDS},
                      len(runs), max(runs, default=0), dict(by_kind["load2d"]), dict(by_kind["prefetch"]),
                      dict(by_kind["store2d"]), dpas_cycles, len(parsed) / target.thread_issue_per_clock,
                      len(skipped), sum(ins.kind == "dpas" for ins in skipped))


def isa_report(isa: str, kernel: str, target: Target, env: dict) -> IsaReport:
    """The report of listing ``isa`` of ``kernel`` for ``target``; ``env`` is the kernel's
    ``.ze_info`` execution_env (grf_count, spill_size, slm_size, simd_size)."""
    shapes = iga.block_shapes(isa, target.grf_bytes)
    loops = [loop_report(lp, shapes, target) for lp in iga.report_loops(isa)]
    hot = max(loops, key=lambda lp: (lp.dpas, lp.instructions), default=None)
    ordered = ([hot] + [lp for lp in loops if lp is not hot]) if hot else []
    return IsaReport(kernel, target.name, int(env.get("simd_size", target.subgroup_size)),
                     int(env.get("grf_count", target.grf_count)), int(env.get("spill_size", 0)),
                     int(env.get("slm_size", 0)), len(iga.instructions(isa)), ordered)


def zebin_report(zebin: Zebin, kernel: str, target: Target) -> IsaReport:
    """The report of ``kernel`` in ``zebin`` (its ISA and ``.ze_info``)."""
    return isa_report(zebin.isa_text(kernel), kernel, target, zebin.execution_env(kernel))
