"""Whether how a kernel's PTX becomes machine code changes its speed: the same PTX loaded
three ways in one process and timed on the same arguments, alternately.

    python benchmarks/module_load_cuda.py

* ``ptx``: ``cuModuleLoadData`` of the PTX (the driver's JIT compiles it);
* ``cuLink``: the cubin the driver's linker makes of it (``cuLinkCreate`` /
  ``cuLinkAddData`` / ``cuLinkComplete``: what ``runtime/cubins.py`` cached before
  decision 064);
* ``ptxas``: the cubin of ``ptxas`` at ``cubins.ptxas_arch`` where ``cubins.find_ptxas``
  finds one (what ``runtime/cubins.py`` caches now).

For ``ops.matmul`` f16 at 4096 and 8192 and ``ops.layer_norm`` / ``ops.softmax`` over
8192 x 8192 f16: each way's kernel time (CUDA events around 10 launches, median of 15)
and the registers and local memory the driver reports for its function; then the op
called 10 times back to back the same way (its host path and the kernel cache's module)."""
from __future__ import annotations

import ctypes
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_events import report  # noqa: E402

from xetile_dsl import nv_launch, ops  # noqa: E402
from xetile_dsl.runtime import backend_cuda, cubins  # noqa: E402
from xetile_dsl.runtime.backend_cuda import check  # noqa: E402


def _ptxas() -> str | None:
    return cubins.find_ptxas()


def _ptxas_cubin(ptx: str) -> bytes:
    return cubins.assemble(ptx, cubins.ptxas_arch(ptx, backend_cuda.compute_capability(0)), _ptxas())


def _link(ptx: str) -> bytes:
    """The cubin of the driver's linker (a context must be current)."""
    driver = backend_cuda._driver()
    data = ptx.encode() + b"\0"
    state = check(driver.cuLinkCreate(0, [], []))
    try:
        check(driver.cuLinkAddData(state, driver.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data), b"module.ptx",
                                   0, [], []))
        address, size = check(driver.cuLinkComplete(state))
        return ctypes.string_at(int(address), int(size))
    finally:
        driver.cuLinkDestroy(state)


def _function(image: bytes, name: str, smem: int):
    driver = backend_cuda._driver()
    module = check(driver.cuModuleLoadData(image))
    fn = check(driver.cuModuleGetFunction(module, name.encode()))
    if smem > 48 * 1024:
        check(driver.cuFuncSetAttribute(
            fn, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem))
    attrs = driver.CUfunction_attribute
    regs = check(driver.cuFuncGetAttribute(attrs.CU_FUNC_ATTRIBUTE_NUM_REGS, fn))
    local = check(driver.cuFuncGetAttribute(attrs.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn))
    return fn, f"{regs} regs, {local} B local"


def _time(fn, grid3, threads, packed, smem) -> float:
    def ten():
        for _ in range(10):
            if grid3 is None:
                fn()
            else:
                backend_cuda.launch_packed(fn, grid3, threads, packed, shared_bytes=smem)
    ten()
    torch.cuda.synchronize()
    times = []
    for _ in range(15):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        ten()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 10)
    return statistics.median(times)


def cases():
    h = torch.float16
    for s in (4096, 8192):
        a, b, c = (torch.randn(s, s, device="cuda", dtype=h) for _ in range(3))
        yield f"matmul f16 {s}^3", lambda a=a, b=b, c=c: ops.matmul(a, b, out=c), 2.0 * s ** 3, "TFLOP/s"
    x = torch.randn(8192, 8192, device="cuda", dtype=h)
    y = torch.empty_like(x)
    w, bb = (torch.randn(8192, device="cuda", dtype=h) for _ in range(2))
    yield "layer_norm f16 8192x8192", lambda: ops.layer_norm(x, w, bb, out=y), 2 * x.numel() * 2, "GB/s"
    yield "softmax f16 8192x8192", lambda: ops.softmax(x, out=y), 2 * x.numel() * 2, "GB/s"


def main() -> None:
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  ptxas: {_ptxas()}"]
    for label, call, work, unit in cases():
        nv_launch._LAST.clear()
        call()
        torch.cuda.synchronize()
        last = next(iter(nv_launch._LAST.values()))
        kernel, grid3, packed = last[3], last[5], last[6]
        smem = kernel.smem_bytes
        images = {"ptx": kernel.ptx.encode() + b"\0"}
        try:
            images["cuLink"] = _link(kernel.ptx)
        except Exception as exc:  # noqa: BLE001
            lines.append(f"{label}: cuLink failed: {exc}")
        if _ptxas():
            try:
                images["ptxas"] = _ptxas_cubin(kernel.ptx)
            except Exception as exc:  # noqa: BLE001
                lines.append(f"{label}: ptxas failed: {exc}")
        fns = {way: _function(image, kernel.name, smem) for way, image in images.items()}
        ms = {way: [] for way in fns}
        for _ in range(3):          # alternate the ways, three rounds
            for way, (fn, _) in fns.items():
                ms[way].append(_time(fn, grid3, kernel.threads, packed, smem))
        ms["ops call"] = []
        for _ in range(3):          # the op itself, 10 calls back to back (its host path, the cache's module)
            ms["ops call"].append(_time(lambda *_: call(), None, None, None, None))
        fns["ops call"] = (None, "the op's own launches")
        for way, (fn, info) in fns.items():
            t = min(ms[way])
            rate = work / t / 1e9 if unit == "TFLOP/s" else work / t / 1e6
            lines.append(f"{label:28} {way:7} {t:8.4f} ms {rate:8.1f} {unit}  ({info}; rounds "
                         + " ".join(f"{v:.4f}" for v in ms[way]) + ")")
        print("\n".join(lines[-len(fns):]), flush=True)
    report(lines, "module_load_cuda.txt")


if __name__ == "__main__":
    sys.exit(main())
