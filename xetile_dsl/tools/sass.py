"""The static SASS report of an NVIDIA kernel (``NvKernel.report()``, the counterpart of
the Intel targets' ``report()``): ptxas's resource line for the kernel's PTX (registers,
stack, spills, shared memory) and, through nvdisasm, each loop of its machine code with
its own instructions by opcode (a nested loop's are its own loop's).

    k = xetile_dsl.compile(fn, sig, consts, target="sm90")
    print(k.report())           # a table
    k.report().to_json()        # the same for tools

Needs ptxas (``runtime.cubins.find_ptxas``) and nvdisasm (PATH, or the
``nvidia-cuda-nvdisasm`` wheel of the ``[test]`` extra)."""
from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field

from ..runtime import cubins
from ._common import ToolNotFound, run

_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_BRANCH = re.compile(r"\bBRA\b[^;]*?(\.L_x_\d+)")
_RESOURCES = {"registers": r"Used (\d+) registers", "stack": r"(\d+) bytes stack frame",
              "spill_stores": r"(\d+) bytes spill stores", "spill_loads": r"(\d+) bytes spill loads",
              "static_shared": r"(\d+) bytes smem"}


def find_nvdisasm() -> str | None:
    """nvdisasm on PATH, else the one of an ``nvidia-*`` wheel (``nvidia/<pkg>/bin``)."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        spec = importlib.util.find_spec("nvidia")      # (the wheels' namespace package, not imported)
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or ()) if spec else ():
        for sub in sorted(os.listdir(root)):
            path = os.path.join(root, sub, "bin", "nvdisasm")
            if os.path.isfile(path):
                if not os.access(path, os.X_OK):
                    os.chmod(path, 0o755)
                return path
    return None


@dataclass
class SassLoop:
    """A loop of the SASS: its first and last instruction (indices), how deep it nests
    (1: outermost), and its own instructions by opcode (those of loops inside it left out)."""
    start: int
    end: int
    depth: int
    counts: dict = field(default_factory=dict)

    @property
    def instructions(self) -> int:
        return sum(self.counts.values())


@dataclass
class SassReport:
    kernel: str
    arch: str
    threads: int
    dynamic_shared: int
    registers: int = 0
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    static_shared: int = 0
    loops: list = field(default_factory=list)

    def loop_with(self, opcode: str) -> SassLoop | None:
        """The innermost loop whose own instructions hold ``opcode`` (HGMMA, HMMA, ...)."""
        having = [lp for lp in self.loops if lp.counts.get(opcode)]
        return max(having, key=lambda lp: lp.depth) if having else None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    def __str__(self) -> str:
        lines = [f"{self.kernel} ({self.arch}, {self.threads} threads): {self.registers} registers, "
                 f"{self.stack} B stack, {self.spill_stores} B spill stores, {self.spill_loads} B spill loads, "
                 f"{self.static_shared} B static + {self.dynamic_shared} B dynamic shared memory"]
        for lp in self.loops:
            top = ", ".join(f"{k} {v}" for k, v in sorted(lp.counts.items(), key=lambda kv: (-kv[1], kv[0])))
            lines.append(f"loop [{lp.start}, {lp.end}] depth {lp.depth}: {lp.instructions} instructions: {top}")
        return "\n".join(lines)


def loops(sass: str) -> list[SassLoop]:
    """The loops of ``sass`` (nvdisasm text): a branch back to a label above it closes
    one; each with its own instructions by opcode."""
    opcodes, labels, backs = [], {}, []
    for line in sass.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(opcodes)
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        text = m.group(2)
        words = text.split()
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        branch = _BRANCH.search(text)
        if branch and branch.group(1) in labels and labels[branch.group(1)] <= len(opcodes):
            backs.append((labels[branch.group(1)], len(opcodes)))
        opcodes.append(op.split(".")[0])
    spans = sorted(set(backs), key=lambda s: (s[0], -s[1]))
    out = []
    for start, end in spans:
        depth = 1 + sum(1 for s, e in spans if (s, e) != (start, end) and s <= start and end <= e)
        inner = [(s, e) for s, e in spans if (s, e) != (start, end) and start <= s and e <= end]
        own = collections.Counter(opcodes[i] for i in range(start, end + 1)
                                  if not any(s <= i <= e for s, e in inner))
        out.append(SassLoop(start, end, depth, dict(own)))
    return out


def report(kernel) -> SassReport:
    """The report of an ``NvKernel`` (see the module's text)."""
    ptxas, nvdisasm = cubins.find_ptxas(), find_nvdisasm()
    if ptxas is None or nvdisasm is None:
        raise ToolNotFound("report() of an NVIDIA kernel needs ptxas and nvdisasm (the nvidia-cuda-nvcc and "
                           "nvidia-cuda-nvdisasm wheels of the [test] extra, or a CUDA toolkit on PATH); missing: "
                           + ", ".join(n for n, p in (("ptxas", ptxas), ("nvdisasm", nvdisasm)) if p is None))
    arch = kernel.ptx_arch or kernel.target.ptx_arch
    with tempfile.TemporaryDirectory(prefix="xetile-sass-") as folder:
        src, cubin = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
        with open(src, "w") as f:
            f.write(kernel.ptx)
        done = run([ptxas, f"-arch={arch}", "-v", src, "-o", cubin])
        info = done.stderr.decode(errors="replace")
        if done.returncode != 0:
            raise ToolNotFound(f"ptxas -arch={arch} refused the kernel's PTX: {info.strip()[:500]}")
        sass = run([nvdisasm, cubin]).stdout.decode(errors="replace")
    found = {key: int(m.group(1)) for key, pat in _RESOURCES.items() if (m := re.search(pat, info))}
    return SassReport(kernel.name, arch, kernel.threads, kernel.smem_bytes, loops=loops(sass), **found)
