"""Prove the ISA instrument itself, independently of xetile_dsl's compiler.

If these pass, a green ISA check elsewhere means IGC really emitted DPAS / 2D-block
messages, and a builtin IGC left unresolved or dropped makes the check fail.
"""
from __future__ import annotations

import stat

import pytest

import isa_kernels as K
from conftest_tools import require_ocloc, require_spirv_tool
from xetile_dsl.tools import disasm, ocloc, spirv_tools
from xetile_dsl.tools.elf import ElfError, read_sections
from xetile_dsl.tools.ocloc import CALLA, DPAS, LOAD_BLOCK2D, STORE_BLOCK2D, check_isa, count


@pytest.fixture(scope="module")
def pvc_good():
    """(spirv, zebin) for the PVC kernel with real DPAS and 2D block read builtins."""
    require_ocloc()
    spv = K.pvc_dpas_block2d()
    return spv, ocloc.compile_spirv(spv, "pvc")


# (a) the real builtins reach the hardware
def test_pvc_dpas_and_block2d_pass(pvc_good):
    _, zb = pvc_good
    assert zb.kernels == ["k"]
    assert check_isa(zb, "k", expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    isa = zb.isa_text("k")
    assert count(isa, DPAS) >= 1 and count(isa, LOAD_BLOCK2D) >= 1
    assert count(isa, STORE_BLOCK2D) == 0 and count(isa, CALLA) == 0


def test_pvc_zebin_metadata(pvc_good):
    _, zb = pvc_good
    env = zb.execution_env("k")
    assert env["simd_size"] == 16 and env["has_dpas"] is True and env["grf_count"] == 128
    assert zb.spill_size("k") == 0
    assert zb.undefined_symbols() == []
    assert {".text.k", ".ze_info", ".symtab", ".spv"} <= set(zb.sections)
    assert any(s.name == ocloc.PATCH_SYMBOL and s.undefined for s in zb.symbols())


def test_iga64_agrees_with_ocloc_disasm(pvc_good):
    """Debian's iga64 on the cut-out .text decodes the same dpas / 2D-block sends."""
    try:
        ocloc.find_iga64()
    except ocloc.ToolNotFound as exc:
        pytest.skip(str(exc))
    _, zb = pvc_good
    isa = disasm._disasm_with_iga64(zb, "k")
    assert count(isa, DPAS) == count(zb.isa_text("k"), DPAS) >= 1
    assert count(isa, LOAD_BLOCK2D) == count(zb.isa_text("k"), LOAD_BLOCK2D) >= 1


def test_large_grf_option_is_applied():
    require_ocloc()
    zb = ocloc.compile_spirv(K.pvc_dpas_block2d(), "pvc", "-ze-opt-large-register-file")
    assert zb.execution_env("k")["grf_count"] == 256


# (b) an unresolved builtin makes the check fail
def test_misspelt_builtin_is_reported():
    require_ocloc()
    zb = ocloc.compile_spirv(K.pvc_dpas_block2d(K.MISSPELT_DPAS), "pvc")  # "Build succeeded"
    problems = " | ".join(check_isa(zb, "k", expect_dpas=True, expect_block2d=True))
    assert "calla" in problems
    assert K.MISSPELT_DPAS in problems and "undefined symbols" in problems
    assert "no dpas" in problems


def test_silently_dropped_builtin_is_reported():
    """PVC's DPAS signature on dg2 is removed without a word; the check still fails."""
    require_ocloc()
    zb = ocloc.compile_spirv(K.pvc_dpas_block2d(), "dg2-g10")
    problems = check_isa(zb, "k", expect_dpas=True, expect_block2d=False)
    assert any("no dpas" in p for p in problems)
    assert any("block2d" in p for p in problems)  # dg2 has no 2D block IO, yet IGC emits it


# (c) the module is valid SPIR-V
def test_spirv_val_accepts_pvc_kernel():
    require_spirv_tool("spirv-val")
    spv = K.pvc_dpas_block2d()
    spirv_tools.validate(spv)
    text = spirv_tools.disassemble(spv)
    assert "SubgroupSize 16" in text and K.PVC_DPAS in text


def test_spirv_val_rejects_garbage():
    require_spirv_tool("spirv-val")
    with pytest.raises(spirv_tools.SpirvValidationError):
        spirv_tools.validate(b"\x03\x02\x23\x07" + b"\0" * 16)


# (d) ARC / DG2
def test_dg2_dpas_without_block2d():
    require_ocloc()
    spv = K.dg2_dpas()
    zb = ocloc.compile_spirv(spv, "dg2-g10")
    assert check_isa(zb, "k", expect_dpas=True, expect_block2d=False, expect_simd=8) == []
    assert count(zb.isa_text("k"), DPAS) >= 1


# failures are loud
def test_ocloc_error_carries_log():
    require_ocloc()
    with pytest.raises(ocloc.OclocError) as info:
        ocloc.compile_spirv(b"not spir-v", "pvc")
    assert info.value.returncode != 0 and "magic" in info.value.log


def test_unknown_kernel_is_a_problem(pvc_good):
    assert "not in zebin" in check_isa(pvc_good[1], "nope")[0]


# tool discovery (no ocloc needed)
def _fake_tool(tmp_path, name: str, script: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_debian12_ocloc_is_refused_as_too_old(tmp_path, monkeypatch):
    """Debian 12's ocloc 22.43 has no --version; it must be refused, not used."""
    fake = _fake_tool(tmp_path, "ocloc", 'echo "Invalid option (arg 1): --version"; exit 226')
    monkeypatch.setenv("XETILE_OCLOC", fake)
    path, reason = ocloc.ocloc_status()
    assert path is None and "too old" in reason


def test_old_version_number_is_refused(tmp_path, monkeypatch):
    fake = _fake_tool(tmp_path, "ocloc", "echo 22.43.024595")
    monkeypatch.setenv("XETILE_OCLOC", fake)
    with pytest.raises(ocloc.ToolNotFound, match="too old"):
        ocloc.find_ocloc()


def test_missing_ocloc_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("XETILE_OCLOC", raising=False)
    monkeypatch.setenv("XETILE_TOOLS_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    path, reason = ocloc.ocloc_status()
    assert path is None and "was not found" in reason and "python -m xetile_dsl install-tools" in reason


def test_elf_reader_rejects_non_elf():
    with pytest.raises(ElfError):
        read_sections(b"\0" * 80)


def test_require_ocloc_fails_when_required(tmp_path, monkeypatch):
    """Under XETILE_REQUIRE_OCLOC=1 a missing ocloc is a failure, not a skip."""
    monkeypatch.setenv("XETILE_OCLOC", str(tmp_path / "absent"))
    monkeypatch.setenv("XETILE_REQUIRE_OCLOC", "1")
    with pytest.raises(pytest.fail.Exception, match="XETILE_REQUIRE_OCLOC=1"):
        require_ocloc()
    monkeypatch.setenv("XETILE_REQUIRE_OCLOC", "0")
    with pytest.raises(pytest.skip.Exception):
        require_ocloc()
