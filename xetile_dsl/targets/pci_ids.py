"""Which GPU is which target: PCI device ids, runtime architecture names and marketing
names of each target's GPUs (hardware facts; runtime/devices.py does the matching).

The ids are the device id lists of Intel's compute runtime (``device_ids_configs_*.h``
of intel/compute-runtime, 2025) for PVC, Battlemage (G21, G31), Lunar Lake, Panther Lake
and DG2 (G10, G11, G12).  A family's id range catches SKUs released after that list.
"""
from __future__ import annotations

import re

#: target -> PCI device ids of its GPUs
PCI_DEVICE_IDS = {
    "pvc": (0x0BD0, 0x0BD4, 0x0BD5, 0x0BD6, 0x0BD7, 0x0BD8, 0x0BD9, 0x0BDA, 0x0BDB, 0x0B69, 0x0B6E),
    "bmg": (0xE202, 0xE209, 0xE20B, 0xE20C, 0xE20D, 0xE210, 0xE211, 0xE212, 0xE215, 0xE216,   # G21
            0xE220, 0xE221, 0xE222, 0xE223),                                                  # G31
    "lnl": (0x6420, 0x64A0, 0x64B0),
    "ptl": (0xB080, 0xB081, 0xB082, 0xB083, 0xB08F, 0xB090, 0xB0A0, 0xB0B0),
    "arc": (0x4F80, 0x4F81, 0x4F82, 0x4F83, 0x4F84, 0x5690, 0x5691, 0x5692, 0x56A0, 0x56A1, 0x56A2,  # G10
            0x56AF, 0x56BE, 0x56BF, 0x56C0, 0x56C2,
            0x4F87, 0x4F88, 0x5693, 0x5694, 0x5695, 0x56A5, 0x56A6, 0x56B0, 0x56B1, 0x56BA, 0x56BB,  # G11
            0x56BC, 0x56BD, 0x56C1,
            0x4F85, 0x4F86, 0x5696, 0x5697, 0x56A3, 0x56A4, 0x56B2, 0x56B3),                       # G12
}

#: (id & mask == value) -> target: each family's id range, for ids newer than the lists
PCI_ID_RANGES = (
    (0xFFF0, 0x0BD0, "pvc"),
    (0xFF00, 0xE200, "bmg"),
    (0xFF00, 0x6400, "lnl"),
    (0xFF00, 0xB000, "ptl"),
    (0xFF00, 0x5600, "arc"),
)

#: architecture names the runtimes report -> target: SYCL's ``ext_oneapi_architecture``
#: (``intel_gpu_bmg_g21``) and ocloc's device names (``bmg-g21-a0``, Level Zero ip versions)
ARCHITECTURE_PREFIXES = (
    ("intel_gpu_pvc", "pvc"), ("pvc", "pvc"),
    ("intel_gpu_bmg", "bmg"), ("bmg", "bmg"),
    ("intel_gpu_lnl", "lnl"), ("lnl", "lnl"),
    ("intel_gpu_ptl", "ptl"), ("ptl", "ptl"),
    ("intel_gpu_dg2", "arc"), ("intel_gpu_acm", "arc"), ("dg2", "arc"), ("acm", "arc"),
)

#: device names (Level Zero / OpenCL ``name``) -> target, when no id is reported
NAME_PATTERNS = (
    (re.compile(r"data center gpu max|ponte vecchio|\bpvc\b", re.I), "pvc"),
    (re.compile(r"battlemage|\barc(\(tm\))? (pro )?b(5[78]0|[56]0)\b|\bbmg\b", re.I), "bmg"),
    (re.compile(r"lunar lake|\barc(\(tm\))? 1[34]0v\b|\blnl\b", re.I), "lnl"),
    (re.compile(r"panther lake|\barc(\(tm\))? b3[0-9]0\b|\bptl\b", re.I), "ptl"),
    (re.compile(r"\barc(\(tm\))? (pro )?a\d|\bdg2\b|\bflex\b|alchemist", re.I), "arc"),
)

#: Intel GPUs that are none of the targets, and the target whose rules they are closest to.
CLOSEST_TARGETS = (
    (re.compile(r"(?<![a-z])(xe3p?|nvl|wcl|cri)(?![a-z])|nova lake|wildcat lake|crescent island", re.I), "ptl",
     "newer Xe3 GPUs keep 16-lane subgroups, DPAS and 2D block messages"),
    (re.compile(r".*", re.I), "arc",
     "Xe-LP/Xe-LPG integrated GPUs have 8-lane subgroups and no 2D block messages like ARC"),
)
