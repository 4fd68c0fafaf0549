"""CUDA-event timing shared by the NVIDIA benchmarks (vs_cuda.py, vs_cuda_attention.py and
the Triton peers): the median of event-timed runs after warm-ups, on the current stream;
and :func:`report`, a benchmark's printed table kept under ``$OUT`` too."""
from __future__ import annotations

import os
import statistics

import torch


def median_ms(fn, reps: int, warmup: int) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` runs, each between two CUDA events,
    after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def report(lines: list[str], name: str) -> None:
    """Print ``lines``; with ``$OUT`` set (a device call's folder), also write them to
    ``$OUT/name``."""
    text = "\n".join(lines)
    print(text)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], name), "w") as f:
            f.write(text + "\n")
