"""Launch grids: an int or a tuple of 1-3 positive ints, checked and made a 3-tuple.

A launch runs ``global = (grid[0]*workgroup_size, grid[1], grid[2])`` work items in
workgroups of ``local = (workgroup_size, 1, 1)`` (``program_id(d)`` is ``get_group_id(d)``);
:func:`check_global_range` keeps that within what every runtime accepts.
"""
from __future__ import annotations

import numpy as np

from .arrays import type_name
from ..errors import LaunchError


_GRIDS: dict = {}   # grid as given -> its 3-tuple


def normalize_grid(grid) -> tuple[int, int, int]:
    """``grid`` (an int or a tuple of 1-3 positive ints) as a 3-tuple; LaunchError if bad."""
    if grid.__class__ is tuple and all(n.__class__ is int for n in grid):   # not (True,) == (1,)
        hit = _GRIDS.get(grid)
        if hit is not None:
            return hit
        if len(_GRIDS) > 4096:
            _GRIDS.clear()
        hit = _GRIDS[grid] = _normalize_grid(grid)
        return hit
    return _normalize_grid(grid)


#: The largest global range per dimension, and of all dimensions together, in work items:
#: the SYCL runtime under dpctl refuses larger ranges (its ids are ints), so launches stay
#: within it on every backend.
MAX_GLOBAL_RANGE = 2**31 - 1


def check_global_range(grid3: tuple[int, int, int], workgroup_size: int) -> None:
    """LaunchError unless the launch's global range (``grid[0] * workgroup_size``, ``grid[1]``,
    ``grid[2]`` work items) fits :data:`MAX_GLOBAL_RANGE` per dimension and in total."""
    limits = (MAX_GLOBAL_RANGE // workgroup_size, MAX_GLOBAL_RANGE, MAX_GLOBAL_RANGE)
    total = grid3[0] * workgroup_size * grid3[1] * grid3[2]
    if all(n <= m for n, m in zip(grid3, limits)) and total <= MAX_GLOBAL_RANGE:
        return
    raise LaunchError(f"grid {grid3} is too large: grid[0] may be 1..{limits[0]} (x {workgroup_size} work items "
                      f"per workgroup), grid[1] and grid[2] 1..{MAX_GLOBAL_RANGE}, and the product "
                      f"grid[0] * {workgroup_size} * grid[1] * grid[2] at most {MAX_GLOBAL_RANGE} work items "
                      "(the SYCL runtime's range limit)")


def _normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)):
        raise LaunchError(f"grid must be a tuple of 1 to 3 positive ints, got {type_name(grid)}")
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"grid must have 1 to 3 dimensions, got {len(grid)}: {tuple(grid)!r}")
    for d, n in enumerate(grid):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise LaunchError(f"grid[{d}] must be a positive int, got {type_name(n)} ({n!r})")
        if n <= 0:
            raise LaunchError(f"grid[{d}] must be a positive int, got {n}")
    return tuple(int(n) for n in grid) + (1,) * (3 - len(grid))


