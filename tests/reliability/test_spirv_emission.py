"""SPIR-V emission in one process that compiles many kernels (codegen/spirv/translate.py).

LLVM 22's SPIR-V backend keeps module state in a static, so a module emitted after
others in the same process may define ids twice; the compiler used to notice and emit
again in a new Python process.  Now every module after the process's first is emitted by
a fork of an emitter process that never emits itself: each module must come out exactly
as a brand-new process emits it, and nothing is ever emitted twice.  (For the CPU device
a kernel's module is emitted without its emulated builtins, each builtin's module once
per process, and linked: codegen/spirv/link.py, tests/codegen/test_spirv_link.py.)"""
import os
import subprocess
import sys
import time

import pytest

from xetile_dsl.codegen.builtins import texts as builtin_texts
from xetile_dsl.codegen.spirv import backend as spirv_backend
from xetile_dsl.codegen.spirv import translate as spirv_emit
from xetile_dsl.codegen.spirv import link as spirv_link
from xetile_dsl.compiler import compile as xd_compile
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.tools import spirv_tools

SIGNATURE = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
CONFIGS = [(bm, bn, target) for bm in (8, 16, 32) for bn in (16, 32) for target in ("cpu", "cpu-arc")]


@pytest.fixture(scope="module")
def compiled():
    """Twelve different GEMM kernels compiled one after the other in this process, and how
    the emitter's counters moved meanwhile."""
    before, builtins = dict(spirv_emit.stats), len(spirv_emit._BUILTIN_MODULES)
    kernels = [xd_compile(matmul_kernel, SIGNATURE, {"BM": bm, "BN": bn, "BK": 16}, target=target)
               for bm, bn, target in CONFIGS]
    delta = {k: spirv_emit.stats[k] - before[k] for k in before}
    delta["builtin_modules"] = len(spirv_emit._BUILTIN_MODULES) - builtins
    return kernels, delta


def test_no_module_is_emitted_twice(compiled):
    kernels, delta = compiled
    assert delta["reemitted"] == 0
    assert delta["linked"] == len(CONFIGS)             # each kernel's own part, then the new builtins
    assert delta["in_process"] + delta["forked"] == len(CONFIGS) + delta["builtin_modules"]
    assert delta["forked"] >= len(CONFIGS) + delta["builtin_modules"] - 1   # at most the process's first
    for kernel in kernels:
        assert not spirv_emit.duplicate_result_ids(kernel.spirv)


@pytest.mark.parametrize("index", [1, len(CONFIGS) - 1])
def test_module_is_what_a_new_process_emits(compiled, index):
    """The reference: the kernel's part and each of its builtins' modules emitted by a new
    Python process (the only place whose backend has certainly seen no other module),
    linked."""
    kernel = compiled[0][index]
    split = builtin_texts.split_for_linking(kernel.asm["llvm"])
    fresh = [spirv_link.Relocatable(spirv_emit._emit_in_subprocess(text)) for text in split.builtins]
    assert kernel.spirv == spirv_link.link(spirv_emit._emit_in_subprocess(split.kernel), fresh)


def test_backend_errors_come_back_from_the_emitter():
    """Invalid IR emitted by the forked child is reported as the in-process error would be."""
    assert spirv_emit.emit_spirv(_tiny_kernel())[:4] == b"\x03\x02\x23\x07"   # not the process's first module
    assert spirv_emit._emitted_here
    with pytest.raises(spirv_emit.SpirvEmitError, match="invalid LLVM IR"):
        spirv_emit.emit_spirv("define void @broken( {")


def test_the_emitter_forks_its_child_before_the_module_arrives():
    """Between modules the emitter process already has the child that will emit the next
    one (forked after the last reply, not when the module arrives); that child serves the
    next module and a new one takes its place."""
    spirv_emit.emit_spirv(_tiny_kernel())
    emitter = spirv_emit._emitter
    assert emitter is not None and emitter.alive()
    (spare,) = _children_soon(emitter.proc.pid, lambda found: len(found) == 1)
    assert spirv_emit.emit_spirv(_tiny_kernel())[:4] == b"\x03\x02\x23\x07"
    assert spirv_emit._emitter is emitter
    (next_spare,) = _children_soon(emitter.proc.pid, lambda found: len(found) == 1 and spare not in found)
    assert next_spare != spare


def _children_soon(pid: int, ready, seconds: float = 30.0) -> list[int]:
    """The child processes of ``pid`` once ``ready(children)`` holds (or after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        found = _children(pid)
        if ready(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    """Live (not zombie) child processes of ``pid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def _tiny_kernel() -> str:
    return (f'target datalayout = "{spirv_backend.SPIRV_DATALAYOUT}"\ntarget triple = "{spirv_backend.SPIRV_TRIPLE}"\n'
            "define spir_kernel void @k(ptr addrspace(1) %p) {\n  store i32 1, ptr addrspace(1) %p\n  ret void\n}\n")


def test_spirv_val_starts_before_the_module_is_emitted_and_still_judges_it(monkeypatch):
    """spirv-val's process is started when emission begins (its start-up overlaps the
    emission), is given the emitted module, and rejects an invalid one."""
    events = []
    real_validator, real_emit = spirv_tools.StartedValidator, spirv_emit._emit_clean

    class Recorded(real_validator):
        def __init__(self, *args):
            events.append("spirv-val started")
            super().__init__(*args)

        def send(self, spirv):
            events.append(f"sent {len(spirv)} bytes")
            return super().send(spirv)

        def validate(self, spirv=None):
            events.append("verdict")
            return super().validate(spirv)

    def emit(text):
        events.append("emitting")
        return real_emit(text)

    def scan(binary):
        events.append("id scan")
        return real_scan(binary)
    real_scan = spirv_emit.duplicate_result_ids
    monkeypatch.setattr(spirv_tools, "StartedValidator", Recorded)
    monkeypatch.setattr(spirv_emit, "_emit_clean", emit)
    monkeypatch.setattr(spirv_emit, "duplicate_result_ids", scan)
    spirv = xd_compile(matmul_kernel, SIGNATURE, {"BM": 8, "BN": 16, "BK": 16}, target="cpu").spirv
    # the id scan runs while spirv-val checks the module it was sent
    assert events == ["spirv-val started", "emitting", f"sent {len(spirv)} bytes", "id scan", "verdict"]
    unused = real_validator()
    unused.close()                      # a validator never given a module ends quietly
    broken = spirv[:20] + spirv[24:]
    with pytest.raises(spirv_tools.SpirvValidationError, match="spirv-val rejected the module"):
        real_validator().validate(broken)
    sent = real_validator()
    sent.send(broken)
    with pytest.raises(spirv_tools.SpirvValidationError, match="spirv-val rejected the module"):
        sent.validate()
    sent = real_validator()
    sent.send(spirv)
    sent.validate()


class _Exited(Exception):
    pass


def test_the_spare_makes_its_target_machine_before_the_module_arrives(monkeypatch):
    """A spare child makes its LLVM context and target machine while it waits
    (off the compile's path) and emits the module it then receives with exactly those:
    one fresh machine per module, as LLVM 22 needs.  Run here, with os._exit stubbed."""
    events = []
    real_machine, real_read = spirv_backend._Machine, spirv_backend._read_all

    class Recorded(real_machine):
        def __init__(self, target):
            events.append("machine")
            super().__init__(target)

    def read(fd):
        events.append("request")
        return real_read(fd)

    def emit(target, text, made=None):
        events.append(("emit", type(made).__name__, text))
        return b"spirv"

    def leave(status):
        raise _Exited(status)

    monkeypatch.setattr(spirv_backend, "_Machine", Recorded)
    monkeypatch.setattr(spirv_backend, "_read_all", read)
    monkeypatch.setattr(spirv_backend, "_emit_once", emit)
    monkeypatch.setattr(os, "_exit", leave)
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    os.write(request_w, b"the module")
    os.close(request_w)
    with pytest.raises(_Exited):
        spirv_backend._spare_main(spirv_backend._get_target(), request_r, reply_w)
    os.close(request_r)
    os.close(reply_w)
    assert real_read(reply_r) == b"\0spirv"
    os.close(reply_r)
    assert events == ["machine", "request", ("emit", "Recorded", "the module")]


def test_the_emitter_process_imports_llvmlite_alone():
    """The emitter process runs spirv_backend.py as a script: no module of xetile_dsl is
    imported there (its start-up is on a CPU kernel's first compile's path), and it emits
    what this process emits."""
    code = ("import runpy, sys; runpy.run_path(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'xetile_dsl'))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code, spirv_backend.__file__], capture_output=True, text=True,
                         env=env, cwd="/", check=True)
    assert out.stdout.strip() == "[]"
    assert spirv_emit._emit_in_subprocess(_tiny_kernel()) == spirv_emit.emit_spirv(_tiny_kernel())
