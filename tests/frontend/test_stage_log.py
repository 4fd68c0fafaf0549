"""compile(..., dump="all") keeps the IR after every stage, XETILE_DUMP_IR=1 prints it,
and CompiledKernel.timings has one entry per stage of the one pipeline list that
compile and compile_mlir share."""
from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp

import xetile_dsl as xd
from xetile_dsl import compiler
from xetile_dsl.dialects import parse_module, print_module
from xetile_dsl.errors import UsageError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.lowering import pipeline
from xetile_dsl.lowering.pipeline import pass_names
from xetile_dsl.stage_log import CHECK_STAGES

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
CONST = {"BM": 16, "BN": 16, "BK": 16}


@pytest.fixture(scope="module")
def dumped():
    return xd.compile(matmul_kernel, SIG, CONST, target="cpu", dump="all")


def test_the_pipeline_list_is_frontend_passes_codegen_spirv():
    assert compiler.stage_names("cpu") == ["frontend", *pass_names("pvc"), "llvm", "spirv", "spirv-val"]
    assert compiler.stage_names("arc", isa=True)[-1] == "ocloc"
    assert compiler.stage_names("cpu", isa=True)[-1] == "spirv-val"   # no machine code for the CPU device
    assert compiler.stage_names("interpret") == ["frontend"]
    assert xd.stage_names is compiler.stage_names


def test_timings_have_one_key_per_stage_in_order(dumped):
    assert list(dumped.timings) == compiler.stage_names("cpu")
    assert all(isinstance(s, float) and s >= 0 for s in dumped.timings.values())
    assert dumped.timings["frontend"] > 0 and dumped.timings["spirv"] > 0


def test_dump_all_gives_one_dump_per_ir_stage_in_order(dumped):
    stages = [s for s in compiler.stage_names("cpu") if s not in CHECK_STAGES]
    assert [d.stage for d in dumped.dumps] == stages
    by_stage = {d.stage: d.text for d in dumped.dumps}
    assert by_stage["frontend"] == dumped.asm["xetile"]
    assert by_stage["xegpu-sink-to-uses"] == dumped.asm["xegpu"]   # the last pass of each stage
    assert by_stage["xegpu-rotate-loads"] == dumped.asm["simt"]
    assert by_stage["llvm"] == dumped.asm["llvm"]
    assert "OpEntryPoint Kernel" in by_stage["spirv"] or "bytes of SPIR-V" in by_stage["spirv"]
    assert str(dumped.dumps[1]).startswith(f"// -----// IR Dump After {pass_names('pvc')[0]} //----- //\n")


def test_every_mlir_dump_parses_back_to_the_same_text(dumped):
    for dump in dumped.dumps:
        if dump.stage in ("frontend", *pass_names("pvc")):
            assert print_module(parse_module(dump.text, dump.stage)) == dump.text, dump.stage


def test_no_dumps_unless_asked(monkeypatch):
    monkeypatch.delenv("XETILE_DUMP_IR", raising=False)
    kernel = xd.compile(matmul_kernel, SIG, CONST, target="interpret")
    assert kernel.dumps == [] and list(kernel.timings) == ["frontend"]


def test_env_knob_prints_the_dumps_to_stderr(monkeypatch, capsys):
    monkeypatch.setenv("XETILE_DUMP_IR", "1")
    kernel = xd.compile(matmul_kernel, SIG, CONST, target="interpret")
    err = capsys.readouterr().err
    assert err == str(kernel.dumps[0]) + "\n"
    assert err.startswith("// -----// IR Dump After frontend //----- //\n")


def test_compile_mlir_runs_the_same_stages(dumped):
    kernel = xd.compile_mlir(dumped.asm["xetile"], target="cpu", dump="all")
    assert list(kernel.timings) == compiler.stage_names("cpu")
    assert [d.text for d in kernel.dumps][1:-2] == [d.text for d in dumped.dumps][1:-2]


def test_bad_dump_value_says_what_is_legal():
    with pytest.raises(UsageError, match=r"dump='passes': use dump='all'"):
        xd.compile(matmul_kernel, SIG, CONST, target="interpret", dump="passes")


def test_stage_texts_are_printed_only_when_read(dumped, monkeypatch):
    """A compile prints no MLIR (printing was ~12% of a compile); each text is
    printed at its first read, from the module as that stage left it, and only once."""
    printed = []
    monkeypatch.setattr(pipeline, "print_module", lambda module: printed.append(module) or print_module(module))
    monkeypatch.delenv("XETILE_DUMP_IR", raising=False)
    kernel = xd.compile(matmul_kernel, SIG, CONST, target="cpu")
    assert printed == [] and list(kernel.asm) == ["xetile", "xegpu", "simt", "llvm", "spirv"]
    assert "xegpu.txt" not in kernel.to_files() and printed == []     # cache entries hold no MLIR texts
    for stage in ("simt", "xegpu", "xetile"):                         # any order: each is its stage's snapshot
        assert kernel.asm[stage] == dumped.asm[stage]
        assert kernel.asm[stage] is kernel.asm[stage]
    assert len(printed) == 3


def test_a_jit_compile_keeps_no_stage_snapshots(monkeypatch):
    """The ``@jit`` path (compile_kernel without stage_texts) clones no module for texts
    nobody reads (a kernel from the disk cache has none either; the clones were ~6 ms of
    the RFC 2.1 GEMM's compile); xd.compile keeps the three."""
    clones = []
    original = ModuleOp.clone
    monkeypatch.setattr(ModuleOp, "clone", lambda self, *a, **k: clones.append(self) or original(self, *a, **k))
    kernel = compiler.compile_kernel(matmul_kernel.fn, compiler.parse_signature(SIG), CONST, "cpu")
    assert clones == [] and list(kernel.asm) == ["llvm", "spirv"]
    assert list(xd.compile(matmul_kernel, SIG, CONST, target="cpu").asm) == ["xetile", "xegpu", "simt", "llvm", "spirv"]
    assert len(clones) == 2


def test_a_stage_not_kept_says_where_to_get_it():
    """A @jit kernel (and a disk-cache entry) keeps llvm and spirv only; asking it for a
    lowering stage's text names xd.compile rather than a bare KeyError('xetile')."""
    kernel = compiler.compile_kernel(matmul_kernel.fn, compiler.parse_signature(SIG), CONST, "cpu")
    for keeper in (kernel, compiler.CompiledKernel.from_files(kernel.to_files())):
        with pytest.raises(KeyError, match=r"asm\['xegpu'\] was not kept: this kernel keeps '(llvm|spirv)', '(llvm|spirv)' .*xd.compile"):
            keeper.asm["xegpu"]
        with pytest.raises(KeyError, match="asm has no stage 'ttir'"):
            keeper.asm["ttir"]
        assert keeper.asm.get("xetile") is None and keeper.asm["llvm"] == kernel.asm["llvm"]


@pytest.mark.parametrize("knob, verified", [("1", ["xegpu-sink-to-uses", "xegpu-rotate-loads"]), ("0", [])])
def test_verify_knob_verifies_after_each_stage(monkeypatch, knob, verified):
    """XETILE_VERIFY_IR=1 (the suite's conftest sets it) verifies the module after each
    lowering stage; a compile outside the tests skips it."""
    seen = []
    monkeypatch.setenv("XETILE_VERIFY_IR", knob)
    monkeypatch.setattr(pipeline, "run_guarded", lambda name, run, module: seen.append(name) or run())
    xd.compile(matmul_kernel, SIG, CONST, target="cpu")
    assert [name.split(" ")[0] for name in seen if "verifying" in name] == verified
