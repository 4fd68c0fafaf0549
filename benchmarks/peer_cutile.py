"""cuTile (NVIDIA's tile DSL for Python, ``cuda.tile``, PyPI ``cuda-tile``) as a peer: a
tile GEMM (f16 in, f32 accumulation, f16 out, 128x256x64 blocks) and a vector add, checked
against torch and timed with the CUDA events of ``benchmarks/cuda_events.py`` (the method
of every contender of ``benchmarks/vs_cuda.py``), when ``cuda.tile`` imports and compiles
for this device.  Otherwise one line says why not, with the exception's text verbatim
(cuTile's ``tileiras`` compiler must be on the machine, and its 13.2 release targets
Blackwell and Ampere/Ada, not Hopper: on an H200 a refusal is the expected answer).

    python benchmarks/peer_cutile.py

No ``from __future__ import annotations`` here: cuTile reads the kernels' parameter
annotations (``ct.Constant[int]``) as objects."""
import importlib.metadata
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _kernels(ct):
    """The two cuTile kernels (defined once ``cuda.tile`` has imported)."""
    const = ct.Constant[int]

    @ct.kernel
    def vector_add(x, y, z, T: const):
        i = ct.bid(0)
        ct.store(z, index=(i,), tile=ct.load(x, index=(i,), shape=(T,)) + ct.load(y, index=(i,), shape=(T,)))

    @ct.kernel
    def gemm(a, b, c, BM: const, BN: const, BK: const):
        pm, pn = ct.bid(0), ct.bid(1)
        acc = ct.full((BM, BN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(a, axis=1, shape=(BM, BK))):
            acc = ct.mma(ct.load(a, index=(pm, k), shape=(BM, BK)), ct.load(b, index=(k, pn), shape=(BK, BN)), acc)
        ct.store(c, index=(pm, pn), tile=ct.astype(acc, c.dtype))

    return vector_add, gemm


def lines(quick: bool = False) -> list[str]:
    """The peer's report: check and timing lines, or the one line of why it did not run."""
    try:
        import torch
        import cuda.tile as ct
    except Exception as exc:  # noqa: BLE001 - any failure to import is the answer
        return [f"cutile: cuda.tile does not import here: {_exception_text(exc)}"]
    try:
        version = importlib.metadata.version("cuda-tile")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    if not torch.cuda.is_available():
        return [f"cutile: cuda.tile {version} imports, but torch sees no CUDA device"]
    from cuda_events import median_ms
    major, minor = torch.cuda.get_device_capability()
    head = f"cutile: cuda.tile {version} on {torch.cuda.get_device_name()} (sm_{major}{minor})"
    out = [head]
    try:
        vector_add, gemm = _kernels(ct)
    except Exception as exc:  # noqa: BLE001
        return [f"{head}: its kernels do not define: {_exception_text(exc)}"]
    stream = torch.cuda.current_stream()

    n, T = 1 << 20, 1024
    x, y = (torch.randn(n, device="cuda") for _ in range(2))
    z = torch.full_like(x, float("nan"))
    try:
        ct.launch(stream, (n // T, 1, 1), vector_add, (x, y, z, T))
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the compiler's refusal, verbatim
        return [f"{head}: the vector add does not compile or launch: {_exception_text(exc)}"]
    out.append(f"check cutile vector add f32 n={n} max error {float((z - (x + y)).abs().max()):.3e}")

    BM, BN, BK = 128, 256, 64
    for s in ((1024, 4096) if quick else (1024, 4096, 8192)):
        a, b = (torch.randn(s, s, device="cuda", dtype=torch.float16) for _ in range(2))
        c = torch.full((s, s), float("nan"), device="cuda", dtype=torch.float16)
        grid = (s // BM, s // BN, 1)
        run = lambda: ct.launch(stream, grid, gemm, (a, b, c, BM, BN, BK))  # noqa: E731
        try:
            run()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001
            out.append(f"cutile gemm f16 {s}^3: does not compile or launch: {_exception_text(exc)}")
            break
        ref = torch.matmul(a, b)
        err = float((c.double() - ref.double()).norm() / ref.double().norm())
        ms = median_ms(run, 10, warmup=3)
        out.append(f"cutile gemm f16 {s}^3 {BM}x{BN}x{BK}: {2 * s ** 3 / ms / 1e9:.1f} TFLOP/s ({ms:.4f} ms), "
                   f"error vs torch {err:.2e}")
    return out


if __name__ == "__main__":
    print("\n".join(lines("--quick" in sys.argv)))
