"""Which ops, tutorials and examples build for an NVIDIA target, offline (no GPU).

Every public op of ``xetile_dsl.ops`` (forward and backward, each dtype it takes), the
``examples/tutorial_*.py`` kernels and ``examples/*.py`` are run on numpy arrays with the
launch replaced by a compile (``nv_compiler.compile_nv``: PTX through llvmlite) and, with
``--ptxas``, ptxas's report of each distinct kernel; one line per case:

    python scripts/nv_coverage.py [--target sm90] [--ptxas] [-k SUBSTRING]

``ok`` (with each kernel's name, and with --ptxas its spill bytes), ``refused`` (a
UsageError the op raises on NVIDIA targets by design, or a located compile error saying
what is "not supported on NVIDIA targets": each names what is supported) or ``FAIL`` (any
other error: a backend gap).  An example whose kernels built but whose host code then
checks results (nothing ran) counts as ok.  The outputs are not checked
(nothing runs): benchmarks/nv_ops_check.py checks results on a GPU."""
from __future__ import annotations

import argparse
import os
import re
import runpy
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ml_dtypes  # noqa: E402

import xetile_dsl  # noqa: E402 - loads xetile_dsl.jit
from xetile_dsl import nv_launch, ops  # noqa: E402
from xetile_dsl.errors import CompilationError, LoweringError, UsageError  # noqa: E402
from xetile_dsl.frontend.argspec import ArgSpec  # noqa: E402
from xetile_dsl.nv_compiler import compile_nv  # noqa: E402
from xetile_dsl.ops import configs  # noqa: E402
from xetile_dsl.targets.nvidia import nv_target  # noqa: E402

BF16, E4M3 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn
_NAMES = nv_launch._TORCH_NAMES


class Compiled:
    """The kernels one case compiled (name, NvKernel) in launch order."""

    def __init__(self):
        self.kernels: list = []


CURRENT = Compiled()
TARGET = "sm90"


def _spec(name, value):
    if isinstance(value, xetile_dsl.ArrayTable):     # numpy entries stand for CUDA tensors here, as arrays do
        return ArgSpec("table", _NAMES[str(value.dtype)], 2)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        dtype = str(value.dtype).replace("torch.", "")
        return ArgSpec("array", _NAMES[dtype], len(value.shape))
    return _original_spec(name, value)


def _compile_only(jit, grid, target, args, kwargs):
    """nv_launch.run without the driver: compile once per signature, record the kernel."""
    target = target or TARGET
    runtime_kwargs, options = nv_launch.split_options(kwargs, jit.signature.parameters)
    bound = jit.signature.bind(*args, **runtime_kwargs)
    bound.apply_defaults()
    specs, constants = {}, {}
    for name, value in bound.arguments.items():
        if name in jit.constexpr_params:
            constants[name] = getattr(value, "value", value)
        else:
            specs[name] = _spec(name, value)
    key = (jit.source_hash(), target, tuple(sorted(specs.items())), repr(sorted(constants.items(), key=str)),
           options.key())
    kernel = _CACHE.get(key)
    if kernel is None:
        kernel = _CACHE[key] = compile_nv(jit.fn, specs, constants, nv_target(target), options.num_warps,
                                          options.num_stages)
    CURRENT.kernels.append((jit.fn.__name__, kernel))
    return None


_CACHE: dict = {}
_original_spec = nv_launch._spec


def snapshot() -> tuple:
    """What :func:`install` replaces (for :func:`restore`)."""
    jit_module = sys.modules[xetile_dsl.__name__ + ".jit"]
    return nv_launch._spec, nv_launch.run, jit_module._on_cuda, configs.resolve_target


def restore(saved: tuple) -> None:
    jit_module = sys.modules[xetile_dsl.__name__ + ".jit"]
    nv_launch._spec, nv_launch.run, jit_module._on_cuda, configs.resolve_target = saved


def install(target: str = "sm90") -> None:
    """Route every launch (numpy arrays, torch CPU tensors) to a compile for ``target``."""
    global TARGET
    TARGET = target
    nv_launch._spec = _spec
    nv_launch.run = _compile_only
    sys.modules[xetile_dsl.__name__ + ".jit"]._on_cuda = lambda args, kwargs: True   # (xetile_dsl.jit is also the decorator)
    configs.resolve_target = lambda t=None, like=None: t or target


def _rng():
    return np.random.default_rng(0)


def _a(shape, dtype=np.float16):
    return _rng().standard_normal(shape).astype(dtype)


def op_cases() -> list:
    """(name, thunk) of every public op in each dtype it takes."""
    T = TARGET
    cases = []
    for dt, tag in ((np.float16, "f16"), (BF16, "bf16")):
        a, b = _a((200, 96), dt), _a((96, 136), dt)
        bias = _a((136,), np.float32)
        cases += [
            (f"matmul {tag}", lambda a=a, b=b: ops.matmul(a, b, target=T)),
            (f"matmul {tag} bias gelu", lambda a=a, b=b, bias=bias: ops.matmul(a, b, bias=bias, activation="gelu",
                                                                                target=T)),
            (f"matmul {tag} trans_b", lambda a=a, b=b: ops.matmul(a, np.ascontiguousarray(b.T), trans_b=True,
                                                                   target=T)),
            (f"matmul_backward {tag}", lambda a=a, b=b: ops.matmul_backward(a, b, _a((200, 136), np.float32),
                                                                            target=T)),
            (f"matmul_backward {tag} bias relu",
             lambda a=a, b=b, bias=bias: ops.matmul_backward(a, b, _a((200, 136), np.float32), bias=bias,
                                                             activation="relu", target=T)),
        ]
    e4 = _a((64, 96), np.float32).astype(E4M3)
    cases.append(("matmul f8e4m3 x f8e4m3", lambda: ops.matmul(e4, _a((96, 64), np.float32).astype(E4M3), target=T)))
    for dt, tag in ((np.float32, "f32"), (np.float16, "f16"), (BF16, "bf16")):
        x = _a((37, 300), dt)
        w, bb = _a((300,), np.float32), _a((300,), np.float32)
        y = _a((37, 300), dt)
        cases += [
            (f"softmax {tag}", lambda x=x: ops.softmax(x, target=T)),
            (f"log_softmax {tag}", lambda x=x: ops.log_softmax(x, target=T)),
            (f"softmax_backward {tag}", lambda x=x, y=y: ops.softmax_backward(x, y, target=T)),
            (f"log_softmax_backward {tag}", lambda x=x, y=y: ops.log_softmax_backward(x, y, target=T)),
            (f"layer_norm {tag}", lambda x=x, w=w, bb=bb: ops.layer_norm(x, w, bb, target=T)),
            (f"rms_norm {tag}", lambda x=x, w=w: ops.rms_norm(x, w, target=T)),
            (f"layer_norm_backward {tag}",
             lambda x=x, y=y, w=w: ops.layer_norm_backward(y, x, w, _a((37,), np.float32),
                                                           np.abs(_a((37,), np.float32)), target=T)),
            (f"rms_norm_backward {tag}",
             lambda x=x, y=y, w=w: ops.rms_norm_backward(y, x, w, np.abs(_a((37,), np.float32)), target=T)),
            (f"cross_entropy {tag}",
             lambda x=x: ops.cross_entropy(x, _rng().integers(0, 300, 37).astype(np.int64), target=T)),
            (f"cross_entropy_backward {tag}",
             lambda x=x: ops.cross_entropy_backward(x, _rng().integers(0, 300, 37).astype(np.int64),
                                                    _a((37,), np.float32), _a((37,), np.float32), target=T)),
        ]
    for dt, tag in ((np.float16, "f16"), (BF16, "bf16")):
        x = _a((37, 2, 256), dt)
        cases += [
            (f"silu_mul {tag}", lambda x=x: ops.silu_mul(x.reshape(37, 512), target=T)),
            (f"add_rms_norm {tag}", lambda x=x: ops.add_rms_norm(x.reshape(37, 512), x.reshape(37, 512).copy(),
                                                                 _a((512,), dt), target=T)),
        ]
        for style in ("neox", "gptj"):
            cases.append((f"rope {style} {tag}",
                          lambda dt=dt, style=style: ops.rope(_a((17, 4, 64), dt), _a((17, 2, 64), dt),
                                                              np.arange(17, dtype=np.int32), style=style, target=T)))
        for D in (32, 64, 128):
            q = _a((1, 2, 100, D), dt)
            kv = _a((1, 1, 100, D), dt)
            cases.append((f"attention {tag} D={D}", lambda q=q, kv=kv: ops.attention(q, kv, kv, target=T)))
            cases.append((f"attention {tag} D={D} causal lse",
                          lambda q=q, kv=kv: ops.attention(q, kv, kv, causal=True, return_lse=True, target=T)))
            cases.append((f"attention_backward {tag} D={D}",
                          lambda q=q, kv=kv: ops.attention_backward(q, kv, kv, q, q, _a((1, 2, 100), np.float32),
                                                                    causal=True, target=T)))
        packed = _a((13, 2, 64), dt)
        cu = np.array([0, 5, 13], np.int32)
        cases.append((f"attention {tag} varlen", lambda p=packed: ops.attention(p, p, p, causal=True, cu_seqlens=cu,
                                                                                target=T)))
        cases.append((f"decode_attention {tag}",
                      lambda dt=dt: ops.decode_attention(_a((2, 4, 64), dt), _a((6, 16, 2, 64), dt),
                                                         _a((6, 16, 2, 64), dt), np.arange(6, dtype=np.int32).reshape(2, 3),
                                                         np.array([40, 17], np.int32), target=T)))
        w = _a((256, 128), np.float32)
        x = _a((5, 256), dt)
        for bits, fmt in ((4, "int"), (8, "int"), (8, "e4m3")):
            packed_w = ops.quantize_weights(w, bits=bits, format=fmt)
            cases.append((f"matmul_wq {tag} {fmt}{bits if fmt == 'int' else ''}",
                          lambda x=x, p=packed_w, bits=bits, fmt=fmt: ops.matmul_wq(x, *p, bits=bits, target=T,
                                                                                     format=fmt)))
    return cases


def example_cases() -> list:
    """(name, thunk) of each example: its main() at small sizes (the tutorials) or its
    entry point (llama_decode, train_gpt)."""
    ex = os.path.join(ROOT, "examples")
    cases = []
    for name in sorted(os.listdir(ex)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(ex, name)

        def run(path=path, name=name):
            argv = {"tutorial_01_vector_add.py": ["1000"], "tutorial_06_dropout.py": ["64"],
                    "train_gpt.py": ["--steps", "1", "--target", TARGET, "--d-model", "128", "--layers", "1",
                                     "--context", "32", "--batch", "2"],
                    "llama_decode.py": ["--target", TARGET, "--tokens", "2", "--prompt", "4"],
                    "matmul.py": []}.get(name, [])
            old = sys.argv
            sys.argv = [path, *argv]
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit:
                pass
            finally:
                sys.argv = old
        cases.append((f"example {name[:-3]}", run))
    return cases


def ptxas_report(kernel) -> str:
    """ptxas -v's spill line of ``kernel`` (its own architecture)."""
    from tests.nvptx.test_nvptx_compile import require_ptxas
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(kernel.ptx)
        out = subprocess.run([require_ptxas(), "-v", f"-arch={kernel.ptx_arch or kernel.target.ptx_arch}", src,
                              "-o", os.path.join(tmp, "k.cubin")], capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode:
        return "ptxas error: " + text.strip().splitlines()[-1]
    spill = re.search(r"(\d+) bytes spill stores", text)
    regs = re.search(r"Used (\d+) registers", text)
    return f"{regs.group(1) if regs else '?'} regs, {spill.group(1) if spill else '?'} B spill"


def run_case(name: str, thunk, ptxas: bool = False) -> tuple[str, str]:
    """("ok" | "refused" | "partial" | "FAIL", detail) of one case."""
    CURRENT.kernels.clear()
    try:
        thunk()
        status, detail = "ok", ""
    except UsageError as exc:
        status, detail = "refused", str(exc).splitlines()[0]
    except CompilationError as exc:
        first = str(exc).splitlines()[0]
        # a located error naming what the NVIDIA backend does not lower counts as refused
        status, detail = ("refused" if "not supported on NVIDIA targets" in first else "FAIL"), first
    except Exception as exc:    # noqa: BLE001 - the worklist shows every failure
        status, detail = "FAIL", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        compiled = CURRENT.kernels and not isinstance(exc, (CompilationError, LoweringError))
        if compiled and isinstance(exc, AssertionError):
            # the kernels built; what failed is the example's own check of results nothing computed
            status, detail = "ok", "(its result check needs a GPU)"
        elif compiled:      # host code stopped the case after some kernels built
            status, detail = "partial", f"host: {detail[:90]}"
    names = []
    for kname, kernel in CURRENT.kernels:
        entry = kname + (f" [{ptxas_report(kernel)}]" if ptxas else "")
        if entry not in names:
            names.append(entry)
    if status == "ok" and not names:
        detail = "(no kernel launched)"
    elif status == "FAIL" and names:
        detail += f" (after compiling {', '.join(names)})"
    elif status == "ok" and detail:
        detail = ", ".join(names) + " " + detail
    else:
        detail = (", ".join(names) + ("; " + detail if detail else "")) if names else detail
    return status, detail


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="sm90")
    parser.add_argument("--ptxas", action="store_true", help="assemble each kernel and print its spill")
    parser.add_argument("-k", default="", help="only cases whose name holds this")
    parser.add_argument("--no-examples", action="store_true")
    args = parser.parse_args(argv)
    install(args.target)
    cases = op_cases() + ([] if args.no_examples else example_cases())
    counts = {"ok": 0, "refused": 0, "partial": 0, "FAIL": 0}
    for name, thunk in cases:
        if args.k not in name:
            continue
        status, detail = run_case(name, thunk, args.ptxas)
        counts[status] += 1
        print(f"{name:<40} {status:<8} {detail}", flush=True)
    print(f"{args.target}: {counts['ok']} ok, {counts['refused']} refused, {counts['partial']} partial, "
          f"{counts['FAIL']} FAIL")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
