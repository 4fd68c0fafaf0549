"""CUDA-event timing shared by the NVIDIA benchmarks (vs_cuda.py, vs_cuda_attention.py and
the Triton peers): the median of event-timed runs after warm-ups, on the current stream."""
from __future__ import annotations

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
