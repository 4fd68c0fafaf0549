"""What the Triton-XPU peers (peer_attention_triton.py, peer_w4a16_triton.py) share, on
both sides of their subprocess.

In the Triton-XPU venv (triton-xpu 3.3.0b1, made by
/work/shared/tools/isa-compare/setup_triton.sh), a peer script calls :func:`prepare`
before ``import triton`` (its own cache folder; every run compiles), builds its kernel
with :func:`compile_xpu` (for the PVC device properties below, with no device and no
SYCL headers) and writes it with :func:`write_kernel`: OUTDIR/CONFIG/k.spv, k.ttgir and
meta.json.  In the project venv, an ISA benchmark (peer_attention_isa.py, wq_isa.py)
runs a peer script once per configuration with :func:`run_peer` (Triton aborts the
whole process on some inputs, so one failure must not take the others with it).

Example (in the Triton venv)::

    import peer_triton
    peer_triton.prepare("cache-mine")
    import triton
    kernel = peer_triton.compile_xpu(my_kernel, {"x": "*fp16", "N": "i32"}, {}, {"num_warps": 4}, ("x", "N"))
    peer_triton.write_kernel("/tmp/out", "config", kernel, {"num_warps": 4})
"""
import json
import os
import subprocess
from pathlib import Path

#: what SYCL / Level Zero would report for one PVC tile (Max 1550).  Triton-XPU 3.3
#: compiles for "spir64" and reads only these properties, which a BMG (Xe2) device
#: reports the same way (16-lane DPAS, 2D block IO), so one SPIR-V serves both.
XE_HPC_PROPERTIES = {
    "name": "Intel(R) Data Center GPU Max 1550 (properties given, no device)", "architecture": 0,
    "gpu_eu_count": 448, "gpu_subslice_count": 56, "max_work_group_size": 1024,
    "max_num_sub_groups": 64, "sub_group_sizes": [16, 32], "has_fp64": True,
    "has_subgroup_matrix_multiply_accumulate": True,
    "has_subgroup_matrix_multiply_accumulate_tensor_float32": True,
    "has_subgroup_2d_block_io": True, "has_bfloat16_conversions": True,
}

#: what Triton's JIT gives 16-aligned pointers and sizes
ALIGNED = [["tt.divisibility", 16]]


def prepare(cache: str) -> None:
    """Before ``import triton``: compile into /tmp/tx/``cache`` (unless TRITON_CACHE_DIR
    names another folder), every time (no cached kernel stands in for a compile)."""
    os.environ.setdefault("TRITON_CACHE_DIR", f"/tmp/tx/{cache}")
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"


class _NoSyclArchParser:
    """Stands in for the arch_parser C module that XPUBackend builds against
    <sycl/sycl.hpp>: an empty device arch makes parse_target() use the properties of
    the GPUTarget (XE_HPC_PROPERTIES) instead of running `ocloc query`."""

    @staticmethod
    def parse_device_arch(_arch):
        return ""


def compile_xpu(fn, sig: dict, consts: dict, options: dict, aligned: tuple):
    """The compiled kernel of ``@triton.jit`` function ``fn`` for XE_HPC_PROPERTIES:
    ``sig`` its signature (Triton's type names, "constexpr" for ``consts``' names), the
    arguments named in ``aligned`` marked 16-divisible as Triton's JIT marks aligned
    pointers and sizes, ``options`` Triton's (num_warps, num_stages, grf_mode...)."""
    import triton
    from triton.backends import backends
    from triton.backends.compiler import GPUTarget

    backends["intel"].compiler.__init__.__globals__["compile_module_from_src"] = \
        lambda _src, _name: _NoSyclArchParser()
    attrs = {(i,): ALIGNED for i, arg in enumerate(sig) if arg in aligned}
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
    return triton.compiler.compile(src, target=GPUTarget("xpu", XE_HPC_PROPERTIES, 16), options=options)


def write_kernel(out_dir: str, name: str, kernel, meta: dict) -> dict:
    """Write ``kernel``'s SPIR-V, TTGIR and meta.json (Triton's version, the kernel's name
    and IGC build options, then ``meta``) into OUT_DIR/NAME; prints and returns the meta."""
    import triton

    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "k.spv"), "wb") as f:
        f.write(kernel.asm["spv"])
    with open(os.path.join(folder, "k.ttgir"), "w") as f:
        f.write(kernel.asm["ttgir"])
    meta = {"triton": triton.__version__, "kernel": kernel.metadata.name,
            "build_options": kernel.metadata.build_flags, **meta}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps(meta))
    return meta


def triton_python() -> Path:
    """The Triton venv's interpreter: $TX/venv/bin/python (TX default /tmp/tx)."""
    return Path(os.environ.get("TX", "/tmp/tx")) / "venv" / "bin" / "python"


def run_peer(script: Path, out: Path, name: str) -> tuple[bytes, dict]:
    """(SPIR-V, meta) of configuration ``name`` of peer ``script``, run in the Triton venv
    into ``out``/triton-spv; RuntimeError with the end of its stderr when it fails."""
    proc = subprocess.run([str(triton_python()), str(script), str(out / "triton-spv"), name],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"Triton failed on {name} (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    folder = out / "triton-spv" / name
    return (folder / "k.spv").read_bytes(), json.loads((folder / "meta.json").read_text())
