"""Which subgroups talk to which in an SLM exchange, and whether named barriers can
order it (the one place the workgroup-to-subgroup pass asks).

An exchange (tile_conv_layout, a cross-subgroup tile_reduce, a transpose through SLM) has
every subgroup store its pieces of one map into a buffer and, after a barrier, load its
pieces of another map.  A reader must wait for the subgroups that wrote what it reads
(and, inside a loop, a writer for the readers of the previous iteration: the same pairs).
The connected components of "reads what the other wrote" are the groups that have to
meet at the barrier; subgroups of different groups never exchange data.

When those groups are regular, ``group(sg) = (sg // step) mod count`` (the rows of a
subgroup layout: ``step = sg_layout[1]``; its columns: ``step = 1``), a barrier per group
is enough: named barrier ``base + group(sg)`` with ``size`` participants.  The pass uses
them when the target has ids left (id 0 is the workgroup barrier); otherwise, or when the
exchange connects all subgroups, it keeps ``gpu.barrier``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dialects import xetile


def piece_origins(m: xetile.WgMapAttr, shape, sg: int) -> tuple[tuple[int, int], list[tuple[int, int]]]:
    """(pieces per dimension, offsets of subgroup ``sg``'s pieces row-major), the
    wg-to-sg rule: round-robin, wrapping around (mod size) when the layout covers more."""
    coord = (sg // m.layout[1], sg % m.layout[1])
    per_dim = []
    for d in range(2):
        lay, dat, size = m.layout[d], m.data[d], shape[d]
        n = max(1, size // (lay * dat))
        offs = [coord[d] * dat + p * lay * dat for p in range(n)]
        per_dim.append([o % size if lay * dat > size else o for o in offs])
    return (len(per_dim[0]), len(per_dim[1])), [(r, c) for r in per_dim[0] for c in per_dim[1]]


@dataclass(frozen=True)
class Region:
    """What each subgroup touches in a buffer: its pieces of ``wg_map`` over ``shape``
    (``transposed``: of a column-major view of the buffer, so rows and columns swap)."""

    wg_map: xetile.WgMapAttr
    shape: tuple[int, int]
    transposed: bool = False

    def mask(self, sg: int, buffer_shape: tuple[int, int]) -> np.ndarray:
        """The buffer elements subgroup ``sg`` touches."""
        out = np.zeros(buffer_shape, bool)
        d0, d1 = self.wg_map.data
        for r, c in piece_origins(self.wg_map, self.shape, sg)[1]:
            if self.transposed:
                out[c:c + d1, r:r + d0] = True
            else:
                out[r:r + d0, c:c + d1] = True
        return out


@dataclass(frozen=True)
class Groups:
    """Subgroup ``sg`` belongs to group ``(sg // step) % count``; each has ``size`` members."""

    step: int
    count: int
    size: int

    def group_of(self, sg: int) -> int:
        return (sg // self.step) % self.count

    def describe(self) -> str:
        return f"{self.count} groups of {self.size} subgroups (group = sg_id / {self.step} mod {self.count})"


def components(num_subgroups: int, buffer_shape, writes: Region, reads: Region) -> list[int]:
    """Component label of each subgroup: readers joined with the writers they read from."""
    parent = list(range(num_subgroups))

    def find(s: int) -> int:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    written = [writes.mask(s, buffer_shape) for s in range(num_subgroups)]
    for reader in range(num_subgroups):
        read = reads.mask(reader, buffer_shape)
        for writer in range(num_subgroups):
            if (read & written[writer]).any():
                parent[find(reader)] = find(writer)
    return [find(s) for s in range(num_subgroups)]


def regular_groups(labels: list[int]) -> Groups | None:
    """The ``(sg // step) % count`` form of a partition of the subgroups into at least two
    groups, or None when it has none (or is one group)."""
    n = len(labels)
    for count in range(2, n + 1):
        if n % count:
            continue
        for step in range(1, n + 1):
            if n % step or step * count > n:
                continue
            groups = Groups(step, count, n // count)
            if _same_partition(labels, [groups.group_of(s) for s in range(n)]):
                return groups
    return None


def _same_partition(a: list[int], b: list[int]) -> bool:
    pairs = set(zip(a, b))
    return len(pairs) == len(set(a)) == len(set(b))


def exchange_groups(num_subgroups: int, buffer_shape, writes: Region, reads: Region) -> Groups | None:
    """The independent groups of an exchange through a buffer of ``buffer_shape``, or None
    when every subgroup must wait for all others (or the grouping is irregular)."""
    return regular_groups(components(num_subgroups, tuple(buffer_shape), writes, reads))
