"""K-loop load scheduling (xegpu-rotate-loads) in PVC machine code (ocloc, pinned IGC).

Where the register budget allows two K steps of operands (the M = 16 workgroup GEMM, the
README's GEMM at 16x32 tiles), the hot loop runs two K steps per trip and every block
load of both steps comes before its first DPAS in the listing: the second step's
operands are in flight while the first step's DPAS run.  Per K step the loop may cost at
most one instruction more than with ``XETILE_ROTATE_LOADS=off`` (the second step's load
payloads), never a spill or another GRF mode.  Where two steps do not fit (the 256x256
RFC 2.1 tile and 128x256, whose pieces already fill the register file) the loop is
unchanged; so is M = 64 (its 32x16 piece with two steps counts the whole 128-GRF file;
paired anyway, IGC puts the second step's A load after the first step's DPAS).  The
workgroup GEMM shapes are benchmarks/gemm_isa.py's."""
from __future__ import annotations

import warnings

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.tools import isa as iga

GEMM_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": ArgSpec("scalar", "i32", spec="d16")}


def _wg(rows, sm, sn, bn=256):
    return gemm_wg_kernel, {"BM": rows, "BN": bn, "BK": 32, "SM": sm, "SN": sn, "PF": 3, "ACC": xt.float32}


#: name -> (kernel, constexprs): M = 16 of tests/isa/test_small_m_isa.py, the README GEMM at 16x32
PAIRED = {"M=16": _wg(16, 1, 16), "readme 16x32": (matmul_kernel, {"BM": 16, "BN": 32, "BK": 16})}
#: two steps do not fit: M = 64 (32x16 pieces), 128x256 [4, 8], 256x256 [8, 4] (RFC 2.1)
UNPAIRED = {"M=64": _wg(64, 2, 16), "128x256": _wg(128, 4, 8), "256x256": _wg(256, 8, 4)}


def _compile(kernel, consts, monkeypatch, mode):
    monkeypatch.setenv("XETILE_ROTATE_LOADS", mode)
    with warnings.catch_warnings():   # the prefetch plan's note on the re-dealt B prefetch map
        warnings.simplefilter("ignore")
        return xd.compile(kernel, GEMM_SIG, consts, target="pvc")


def _hot_kinds(isa: str) -> list[str]:
    """Instruction kinds of the innermost loop with the most DPAS, in listing order."""
    loops = iga.innermost_loops(isa)
    kinds = [[ins.kind for ln in lp.text.splitlines() if (ins := iga.parse_line(ln)) is not None] for lp in loops]
    return max(kinds, key=lambda k: (k.count("dpas"), len(k)))


@pytest.mark.parametrize("name", sorted(PAIRED))
def test_next_step_loads_come_before_the_first_dpas(name, ocloc_path, monkeypatch):
    kernel, consts = PAIRED[name]
    off = _compile(kernel, consts, monkeypatch, "off")
    on = _compile(kernel, consts, monkeypatch, "auto")
    before, after = off.report(), on.report()
    kinds = _hot_kinds(on.asm["isa"])
    loads_ahead = kinds[:kinds.index("dpas")].count("load2d")
    print(f"pvc {name}: off {before.hot.instructions} instructions / {before.hot.dpas} dpas / "
          f"{before.hot.counts['load2d']} block loads per step; on {after.hot.instructions} / {after.hot.dpas} / "
          f"{after.hot.counts['load2d']} per two steps, {loads_ahead} loads before the first dpas, "
          f"spill {after.spill_bytes} B, {after.grf_mode} GRFs")
    assert after.hot.dpas == 2 * before.hot.dpas                       # two K steps per trip
    assert after.hot.counts["load2d"] == 2 * before.hot.counts["load2d"]
    assert loads_ahead == after.hot.counts["load2d"]                    # both steps' loads before any dpas
    assert after.hot.instructions <= 2 * (before.hot.instructions + 1)
    assert after.spill_bytes == before.spill_bytes == 0
    assert after.grf_mode == before.grf_mode


@pytest.mark.parametrize("name", sorted(UNPAIRED))
def test_tiles_without_room_keep_one_step(name, ocloc_path, monkeypatch):
    kernel, consts = UNPAIRED[name]
    report = _compile(kernel, consts, monkeypatch, "auto").report()
    assert report.hot.dpas == consts["BM"] // consts["SM"] // 8 * (consts["BN"] // consts["SN"] // 16) * 2
    assert report.spill_bytes == 0
