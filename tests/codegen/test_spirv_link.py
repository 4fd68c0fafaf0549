"""The SPIR-V linker (codegen/spirv/link.py) and its use by spirv_emit: the CPU device's
emulated builtins are emitted once per process and linked to each kernel.

Small modules are made from LLVM IR by the same backend (spirv_emit), so the linker is
tested on exactly what it meets; spirv-val is the judge of every linked module, the
CPU device runs them in tests/e2e (every CPU compile links, checked here)."""
import dataclasses
import hashlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import xetile_dsl.language as xt
from xetile_dsl.codegen.builtins import texts as builtin_texts
from xetile_dsl.codegen.spirv import backend as spirv_backend
from xetile_dsl.codegen.spirv import translate as spirv_emit
from xetile_dsl.codegen.spirv import link as spirv_link
from xetile_dsl.compiler import compile as xd_compile
from xetile_dsl.errors import PrefetchPlanWarning
from xetile_dsl.kernels.gemm_transposed import matmul_at_kernel
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.tools import spirv_tools

from tests.e2e.slm_scatter_kernels import slm_histogram_kernel

HEAD = ('target triple = "spirv64-unknown-unknown"\n'
        f'target datalayout = "{spirv_backend.SPIRV_DATALAYOUT}"\n\n')
LANE = 'declare spir_func i32 @"_Z22get_sub_group_local_idv"()\n'
#: a kernel that calls an imported builtin with an opaque pointer (typed i8* at the call)
KERNEL = HEAD + LANE + '''declare spir_func i32 @"xetile.linked.f"(ptr addrspace(1) %".1", i32 %".2")

define spir_kernel void @"k"(ptr addrspace(1) %"p", i32 %"n") {
entry:
  %"lane" = call spir_func i32 @"_Z22get_sub_group_local_idv"()
  %"s" = add i32 %"n", %"lane"
  %"r" = call spir_func i32 @"xetile.linked.f"(ptr addrspace(1) %"p", i32 %"s")
  store i32 %"r", ptr addrspace(1) %"p", align 4
  ret void
}
'''
#: its definition: the pointer is used as i32*, so the backend types the parameter so
BUILTIN = HEAD + LANE + '''define spir_func i32 @"xetile.linked.f"(ptr addrspace(1) %".1", i32 %".2") noinline {
entry:
  %"lane" = call spir_func i32 @"_Z22get_sub_group_local_idv"()
  %"v" = load i32, ptr addrspace(1) %".1", align 4
  %"w" = add i32 %"v", %".2"
  %"x" = mul i32 %"w", %"lane"
  ret i32 %"x"
}
'''
#: a builtin without BuiltIn variables (nothing in the linked module keeps a linkage)
PLAIN_KERNEL = HEAD + '''declare spir_func i32 @"xetile.linked.g"(i32 %".1")

define spir_kernel void @"k"(ptr addrspace(1) %"p", i32 %"n") {
entry:
  %"r" = call spir_func i32 @"xetile.linked.g"(i32 %"n")
  store i32 %"r", ptr addrspace(1) %"p", align 4
  ret void
}
'''
PLAIN_BUILTIN = HEAD + '''define spir_func i32 @"xetile.linked.g"(i32 %".1") noinline {
entry:
  %"w" = mul i32 %".1", 3
  ret i32 %"w"
}
'''
SIGNATURE = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _emit(text: str) -> bytes:
    return spirv_emit._emit_clean(text)


def _instructions(binary: bytes) -> list[tuple]:
    return spirv_link.parse(binary)[1]


def _count(binary: bytes, opcode: int, *operands: int) -> int:
    return sum(1 for inst in _instructions(binary) if inst[0] == opcode and inst[1:1 + len(operands)] == operands)


@pytest.fixture(scope="module")
def linked() -> bytes:
    return spirv_link.link(_emit(KERNEL), [spirv_link.Relocatable(_emit(BUILTIN))])


def test_linked_module_is_valid_and_ids_are_unique(linked):
    spirv_tools.validate(linked)
    header, instructions = spirv_link.parse(linked)
    results = [inst[r] for inst in instructions for _, r, _ in [spirv_link.id_positions(inst)] if r is not None]
    assert len(results) == len(set(results))
    assert max(results) < header[3]


def test_kernel_ids_are_kept(linked):
    """The kernel module's instructions come through with their own ids: its entry point
    is the same instruction (but for the interface) and its function's body unchanged
    apart from the call."""
    kernel = _emit(KERNEL)
    entry = next(i for i in _instructions(kernel) if i[0] == spirv_link.OP_ENTRY_POINT)
    assert any(i[:len(entry)] == entry for i in _instructions(linked) if i[0] == spirv_link.OP_ENTRY_POINT)


def test_types_and_builtin_variables_are_merged(linked):
    """One ``OpTypeInt 32 0`` (the kernel's: SPIR-V forbids a second), one variable of
    BuiltIn SubgroupLocalInvocationId (41), listed by the entry point."""
    assert _count(linked, 21) == len({i[2:] for i in _instructions(linked) if i[0] == 21})   # OpTypeInt by value
    builtin_vars = [i[1] for i in _instructions(linked) if i[0] == spirv_link.OP_DECORATE and i[2:4] == (11, 41)]
    assert len(builtin_vars) == 1
    entry = next(i for i in _instructions(linked) if i[0] == spirv_link.OP_ENTRY_POINT)
    assert builtin_vars[0] in entry[spirv_link._interface_start(entry):]


def test_import_resolved_with_a_bitcast_at_the_call(linked):
    """The declaration is gone and the call goes to the definition, its pointer argument
    bitcast to the definition's parameter type (the backend typed it uchar* at the call
    and uint* in the definition)."""
    instructions = _instructions(linked)
    functions = [i for i in instructions if i[0] == spirv_link.OP_FUNCTION]
    assert len(functions) == 2                                     # the kernel and f: no declaration left
    call = next(i for i in instructions if i[0] == spirv_link.OP_FUNCTION_CALL)
    definition = next(i for i in functions if i[2] == call[3])
    params = {i[2]: i[1] for i in instructions if i[0] == spirv_link.OP_FUNCTION_PARAMETER}
    casts = {i[2]: i for i in instructions if i[0] == spirv_link.OP_BITCAST}
    fn_type = next(i for i in instructions if i[0] == spirv_link.OP_TYPE_FUNCTION and i[1] == definition[4])
    assert call[4] in casts and casts[call[4]][1] == fn_type[3]     # the cast yields the parameter's type
    first_param = next(i for k, i in enumerate(instructions) if i[0] == spirv_link.OP_FUNCTION_PARAMETER
                       and instructions[k - 1] is definition)
    assert params[first_param[2]] == fn_type[3]
    assert not any(i[0] == spirv_link.OP_DECORATE and i[2] == spirv_link.DECORATION_LINKAGE and i[1] == call[3]
                   for i in instructions)


def test_linkage_capability_goes_when_nothing_links():
    linked = spirv_link.link(_emit(PLAIN_KERNEL), [spirv_link.Relocatable(_emit(PLAIN_BUILTIN))])
    spirv_tools.validate(linked)
    assert _count(_emit(PLAIN_KERNEL), spirv_link.OP_CAPABILITY, spirv_link.CAPABILITY_LINKAGE) == 1
    assert _count(linked, spirv_link.OP_CAPABILITY, spirv_link.CAPABILITY_LINKAGE) == 0
    assert not any(i[0] == spirv_link.OP_DECORATE and i[2] == spirv_link.DECORATION_LINKAGE
                   for i in _instructions(linked))


def test_an_unknown_opcode_is_a_link_error():
    """An opcode outside the linker's table is refused, never copied with guessed ids."""
    header, instructions = spirv_link.parse(_emit(PLAIN_BUILTIN))
    at = next(k for k, i in enumerate(instructions) if i[0] == spirv_link.OP_LABEL)
    strange = instructions[:at + 1] + [(4000, 1, 2)] + instructions[at + 1:]
    with pytest.raises(spirv_link.LinkError, match="4000"):
        spirv_link.Relocatable(spirv_link.serialize(header, strange))


def test_a_builtin_module_with_an_import_is_a_link_error():
    """A builtin module may import only BuiltIn variables (it declares no function): the
    kernel module is the one whose imports are resolved."""
    with pytest.raises(spirv_link.LinkError, match="declares a function"):
        spirv_link.link(_emit(PLAIN_KERNEL), [spirv_link.Relocatable(_emit(PLAIN_KERNEL))])


# --- through the compiler -----------------------------------------------------------------

LIBRARY = [
    (matmul_kernel, SIGNATURE, {"BM": 32, "BN": 32, "BK": 16}, "cpu"),
    (matmul_kernel, SIGNATURE, {"BM": 16, "BN": 32, "BK": 16}, "cpu-arc"),
    (matmul_at_kernel, {"at": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
     {"BM": 16, "BN": 32, "BK": 16, "ACC": xt.float32}, "cpu"),
    (gemm_wg_kernel, SIGNATURE, {"BM": 64, "BN": 64, "BK": 32, "SM": 2, "SN": 2, "PF": 2, "ACC": xt.float32}, "cpu"),
    (slm_histogram_kernel, {"x": "i32[:,:]", "out": "i32[:,:]"}, {"N": 16, "BINS": 16}, "cpu"),
]


@pytest.fixture(scope="module")
def library():
    """Library kernels of each family compiled for the CPU device, and the emission
    counters' moves meanwhile: every one with emulated builtins is linked, and spirv-val
    (which emit_spirv runs on the linked module) accepted each."""
    before = dict(spirv_emit.stats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrefetchPlanWarning)     # gemm_wg's prefetch note
        kernels = [xd_compile(fn, sig, const, target=target) for fn, sig, const, target in LIBRARY]
    return kernels, {k: spirv_emit.stats[k] - before[k] for k in before}


def test_a_body_kept_twice_is_cut_from_the_kernel_once(library, monkeypatch):
    """Bodies of one text may be kept more than once (two targets' bodies alike, or a body
    kept again after the kept texts were emptied): the kernel is still cut once per
    definition.  Before, each copy cut the same place, the kernel part repeated the
    declaration and would not parse, and every such module fell back to a whole emission."""
    llvm = library[0][0].asm["llvm"]
    split = builtin_texts.split_for_linking(llvm)
    for name, bodies in list(builtin_texts._BY_NAME.items()):
        monkeypatch.setitem(builtin_texts._BY_NAME, name, bodies + [dataclasses.replace(b) for b in bodies])
    assert builtin_texts.split_for_linking(llvm) == split
    assert all(split.kernel.count(f"declare spir_func {line.split('declare spir_func ', 1)[1]}") == 1
               for line in split.kernel.splitlines() if builtin_texts.LINK_PREFIX in line and line.startswith("declare"))


def test_library_kernels_link_and_validate(library):
    kernels, delta = library
    with_builtins = [k for k in kernels if builtin_texts.split_for_linking(k.asm["llvm"]) is not None]
    assert len(with_builtins) >= 4
    assert delta["linked"] == len(with_builtins)
    assert delta["link_failed"] == delta["link_rejected"] == delta["reemitted"] == 0


def test_gpu_targets_are_not_linked():
    """pvc/arc modules declare the GPU builtins (IGC resolves them): nothing to link."""
    kernel = xd_compile(matmul_kernel, SIGNATURE, {"BM": 32, "BN": 32, "BK": 16}, target="pvc")
    assert builtin_texts.split_for_linking(kernel.asm["llvm"]) is None


_FRESH = """
import hashlib, sys
from xetile_dsl.compiler import compile as xd_compile
from xetile_dsl.errors import PrefetchPlanWarning
from xetile_dsl.kernels.matmul import matmul_kernel
k = xd_compile(matmul_kernel, {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
               {"BM": 32, "BN": 32, "BK": 16}, target="cpu")
sys.stdout.write(hashlib.sha256(k.spirv).hexdigest())
"""


def test_spirv_does_not_depend_on_what_was_compiled_before(library):
    """The README GEMM compiled by a new process (its first and only kernel) gives the
    same bytes as here, after other kernels that share and add builtins; and again after
    more kernels, and with the same (cached) builtin modules."""
    fresh = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, check=True).stdout
    first = library[0][0]
    assert hashlib.sha256(first.spirv).hexdigest() == fresh
    again = xd_compile(matmul_kernel, SIGNATURE, {"BM": 32, "BN": 32, "BK": 16}, target="cpu")
    assert again.spirv == first.spirv


def test_a_failed_link_emits_the_whole_module(library, monkeypatch):
    """A LinkError gives the whole module as the backend emits it; a linked module that
    spirv-val rejects is replaced by the whole module too."""
    llvm = library[0][0].asm["llvm"]
    whole = spirv_emit._emit_in_subprocess(llvm)

    def refuse(kernel, builtins):
        raise spirv_link.LinkError("refused")

    before = dict(spirv_emit.stats)
    monkeypatch.setattr(spirv_link, "link", refuse)
    assert spirv_emit.emit_spirv(llvm) == whole
    assert spirv_emit.stats["link_failed"] == before["link_failed"] + 1

    def corrupt(kernel, builtins):
        words = np.frombuffer(kernel, dtype=np.uint32).copy()
        words[3] = 2                                                   # a bound below every id
        return words.tobytes()

    monkeypatch.setattr(spirv_link, "link", corrupt)
    assert spirv_emit.emit_spirv(llvm) == whole
    assert spirv_emit.stats["link_rejected"] == before["link_rejected"] + 1
