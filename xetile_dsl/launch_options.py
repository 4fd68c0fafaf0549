"""Launch options a kernel call takes besides the kernel's own parameters.

``num_subgroups=n`` (Triton's ``num_warps``, as :class:`~xetile_dsl.Config` passes it) states
how many subgroups each workgroup runs.  The kernel decides that itself: the product of
its tiles' ``wg_map`` ``sg_layout`` (1 for a subgroup-level kernel), so the option is a
check that the launch and the kernel agree, not a setting.
"""
from __future__ import annotations

from .errors import LaunchError

NUM_SUBGROUPS = "num_subgroups"


def split_options(kwargs: dict, params) -> tuple[dict, int | None]:
    """(the kernel's keyword arguments, the requested subgroup count or None); a kernel
    with its own ``num_subgroups`` parameter keeps the name."""
    if NUM_SUBGROUPS not in kwargs or NUM_SUBGROUPS in params:
        return kwargs, None
    rest = dict(kwargs)
    return rest, rest.pop(NUM_SUBGROUPS)


def check_num_subgroups(kernel: str, requested, actual: int) -> None:
    """LaunchError unless ``requested`` (the option, or None) is the kernel's subgroup count."""
    if requested is None or requested == actual:
        return
    raise LaunchError(f"num_subgroups={requested!r}, but {kernel} runs {actual} subgroup(s) per workgroup (the "
                      f"product of its tiles' wg_map sg_layout; 1 without wg_map): pass num_subgroups={actual} "
                      f"or leave it out, or change the kernel's sg_layout")


def launch_grid(kernel: str, grid, arguments: dict, constants: dict):
    """``grid`` itself, or a grid function's answer for the launch: it receives one dict of
    every argument by name (runtime ones as passed) and every constexpr (its value).  Every
    flavour (compiled, interpreter, the autotuner's runs) calls grid functions here; a name
    the launch does not have is a LaunchError listing the names it has."""
    if not callable(grid):
        return grid
    meta = {**arguments, **constants}
    try:
        return grid(meta)
    except KeyError as exc:
        if not exc.args or exc.args[0] in meta:
            raise
        raise LaunchError(f"{kernel}: the grid function asked for meta[{exc.args[0]!r}], but the launch has no "
                          f"argument or constexpr of that name; it has: {', '.join(meta)}") from None
