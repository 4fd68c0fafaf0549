"""Peak matrix-engine throughput of Intel and NVIDIA GPUs, for "% of peak" in benchmarks.

peak = Xe cores x XMX operations per clock per Xe core x clock, one multiply-add counted
as two operations.  Per-core rates: an Xe-HPC core (PVC) has 8 XMX engines of 512 f16
operations per clock (4096, int8 twice that, tf32 half); an Xe-HPG core (ARC, DG2) has
16 engines of 128 (2048).  Core counts and clocks are Intel's published product
specifications (max dynamic / graphics clock); the products are the matrix peaks Intel
quotes (e.g. 838.9 TFLOPS f16 for the Max 1550, 137.6 for the A770).

NVIDIA Hopper (sm90): a multiprocessor's 4 tensor cores do 512 f16/bf16 multiply-adds a
clock each (4096 operations a multiprocessor; tf32 half, int8 twice), dense (NVIDIA's
"with sparsity" figures are twice these).  The H100 SXM and H200 (SXM) have 132
multiprocessors at the 1.83 GHz NVIDIA's tensor peaks are quoted at: 989.4 TFLOPS f16.
The H100 PCIe and the H200 NVL run at other clocks and are not in the table.

Devices are matched by a substring of the runtime's device name (``unless``: a substring
that rules the entry out)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeak:
    """One product's matrix peak: ``cores * ops_per_clock[dtype] * clock_ghz`` GFLOP/s."""

    name_match: str            # substring of the device name the runtime reports
    target: str                # our compile target
    cores: int                 # Xe cores (Intel), multiprocessors (NVIDIA)
    clock_ghz: float
    ops_per_clock: tuple[tuple[str, int], ...]   # per core, by input dtype
    unless: str = ""           # a substring of the device name that rules the entry out

    def tflops(self, dtype: str) -> float | None:
        """Peak TFLOPS (TOPS for int8) for inputs of ``dtype``, None if no matrix path."""
        rate = dict(self.ops_per_clock).get(dtype)
        return None if rate is None else self.cores * rate * self.clock_ghz / 1000.0


_XE_HPC = (("f16", 4096), ("bf16", 4096), ("int8", 8192), ("tf32", 2048))
_XE_HPG = (("f16", 2048), ("bf16", 2048), ("int8", 4096))
_HOPPER = (("f16", 4096), ("bf16", 4096), ("int8", 8192), ("tf32", 2048))

PEAKS = (
    DevicePeak("Max 1550", "pvc", 128, 1.6, _XE_HPC),
    DevicePeak("Max 1100", "pvc", 56, 1.55, _XE_HPC),
    DevicePeak("A770", "arc", 32, 2.1, _XE_HPG),
    DevicePeak("A750", "arc", 28, 2.05, _XE_HPG),
    DevicePeak("H200", "sm90", 132, 1.83, _HOPPER, unless="NVL"),
    DevicePeak("H100 80GB HBM3", "sm90", 132, 1.83, _HOPPER),
)


def peak_for(device_name: str) -> DevicePeak | None:
    """The peak entry whose ``name_match`` occurs in ``device_name`` (None: unknown device)."""
    return next((p for p in PEAKS if p.name_match in device_name and not (p.unless and p.unless in device_name)),
                None)
