"""Launch options a kernel call takes besides the kernel's own parameters (Triton's names).

* ``num_warps=n`` -- the subgroups of each workgroup: one Triton warp is one subgroup, so
  the workgroup is ``n`` subgroups of the target's subgroup size (``n x 16`` work items on
  pvc, ``n x 8`` on arc).  A kernel with wg_maps decides how many it runs: the product of
  their ``sg_layout``.  So ``num_warps`` states that count and a launch that contradicts
  it is refused, before the device is touched, saying the kernel's count
  (docs/decisions/023-num-warps-is-the-subgroup-count.md).  A kernel that leaves its
  count to the launch declares ``num_warps: xt.constexpr`` and builds its wg_maps from
  it (below).  A kernel **without** wg_map takes any ``num_warps=n``: its workgroup runs
  ``n`` subgroups, subgroup 0 does all of the kernel's work and the others exit at entry
  (pass ``xetile-one-working-subgroup``), with a warning at the kernel's line; every
  flavour gives the ``num_warps=1`` answer, as no store or atomic runs ``n`` times.  Such
  a kernel calling ``xt.barrier()`` is refused for ``n > 1``, as the exited subgroups
  would never reach the barrier
  (docs/decisions/045-num-warps-on-kernels-without-wg-map.md)::

      @xd.jit
      def doubled(x, out):                       # no wg_map
          xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [8, 32])) * 2.0,
                        xt.init_tile(out, [0, 0], [8, 32]))
      doubled[(1,)](x, out, num_warps=4)         # 4 subgroups, subgroup 0 works; warns

  ``num_subgroups=n`` is the same option under this project's name; giving both with
  different values is an error.
* ``num_stages=s`` -- the pipelining depth of K loops: each ``prefetch_tile`` of a K loop
  (a loop with a ``tile_mma``) runs ``s - 1`` steps ahead of the loads it serves
  (pass ``xetile-prefetch-stages``); without it the distance is the kernel's own.

A kernel may declare a parameter of one of these names (``num_warps: xt.constexpr``):
a keyword of that name then reaches the kernel as well and is still the launch option --
the way for a kernel to size its wg_maps by the launch's ``num_warps``
(``xt.wg_map(sg_layout=[num_warps, 1], sg_data=[BM // num_warps, BN])``).  Both are compile
options (:meth:`LaunchOptions.compile_options`): part of the kernel cache key's
``options`` part, so each value compiles once.  Bad values (not a positive int,
``num_warps`` not a power of two or more subgroups than the target's largest
workgroup) are :class:`~xetile_dsl.errors.LaunchError`\\ s raised before anything is
compiled or launched.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import LaunchError

NUM_WARPS = "num_warps"
NUM_SUBGROUPS = "num_subgroups"
NUM_STAGES = "num_stages"
#: every launch option name (num_subgroups is num_warps under this project's name)
OPTION_NAMES = (NUM_WARPS, NUM_SUBGROUPS, NUM_STAGES)


@dataclass(frozen=True)
class LaunchOptions:
    """The launch options of one call; None where not given.  ``spelled`` is the name the
    caller used for the subgroup count (messages repeat it)."""

    num_warps: int | None = None
    num_stages: int | None = None
    spelled: str = NUM_WARPS

    def compile_options(self) -> dict:
        """The options that change the compiled kernel, as the cache key's options part
        holds them (only those given: a launch without options keeps its old key)."""
        out = {}
        if self.num_warps is not None:
            out[NUM_WARPS] = self.num_warps
        if self.num_stages is not None:
            out[NUM_STAGES] = self.num_stages
        return out

    def key(self) -> tuple:
        """The launch-path dictionary's part for the options."""
        return (self.num_warps, self.num_stages)


NO_OPTIONS = LaunchOptions()


def split_options(kwargs: dict, params) -> tuple[dict, LaunchOptions]:
    """(the kernel's keyword arguments, the launch options, checked).  A kernel with a
    parameter of an option's name receives the keyword's value too (a ``num_warps:
    xt.constexpr`` builds its wg_maps from it), and the option still applies."""
    if not kwargs or not any(name in kwargs for name in OPTION_NAMES):
        return kwargs, NO_OPTIONS
    rest = dict(kwargs)
    given = {name: rest[name] if name in params else rest.pop(name) for name in OPTION_NAMES if name in rest}
    for name, value in given.items():
        _check_positive_int(name, value)
    warps, subgroups = given.get(NUM_WARPS), given.get(NUM_SUBGROUPS)
    if warps is not None and subgroups is not None and warps != subgroups:
        raise LaunchError(f"num_warps={warps!r} and num_subgroups={subgroups!r} name the same option (subgroups "
                          f"per workgroup); give one of them")
    count = warps if warps is not None else subgroups
    if count is not None and count & (count - 1):
        raise LaunchError(f"{NUM_WARPS if warps is not None else NUM_SUBGROUPS}={count!r} is not a power of two; "
                          f"a workgroup runs 1, 2, 4, 8, ... subgroups")
    spelled = NUM_SUBGROUPS if warps is None and subgroups is not None else NUM_WARPS
    return rest, LaunchOptions(count, given.get(NUM_STAGES), spelled)


def _check_positive_int(name: str, value) -> None:
    if value.__class__ is bool or not isinstance(value, int) or value < 1:
        raise LaunchError(f"{name}={value!r}: expected a positive int (num_warps: subgroups per workgroup, a power "
                          f"of two; num_stages: K-loop pipelining depth, 1 = no prefetch ahead)")


def check_for_target(kernel: str, options: LaunchOptions, target: str, subgroup_size: int,
                     max_workgroup_size: int) -> None:
    """LaunchError when ``options.num_warps`` subgroups of ``subgroup_size`` lanes exceed
    the target's largest workgroup (checked before the kernel is compiled)."""
    count = options.num_warps
    if count is None or count * subgroup_size <= max_workgroup_size:
        return
    raise LaunchError(f"{kernel}: {options.spelled}={count} subgroups of {subgroup_size} lanes are "
                      f"{count * subgroup_size} work items, more than {target}'s largest workgroup "
                      f"({max_workgroup_size}); use at most {max_workgroup_size // subgroup_size}")


def check_num_subgroups(kernel: str, requested, actual: int, spelled: str = NUM_WARPS) -> None:
    """LaunchError unless ``requested`` (the option, or None) is the subgroup count of a
    kernel with wg_maps (a kernel without one takes any count: the module docstring)."""
    if requested is None or requested == actual:
        return
    raise LaunchError(f"{spelled}={requested!r}, but {kernel} runs {actual} subgroup(s) per workgroup (the "
                      f"product of its tiles' wg_map sg_layout): pass {spelled}={actual} or leave it out, or change "
                      f"the kernel's sg_layout (a kernel parameter 'num_warps: xt.constexpr' receives the "
                      f"option, to build its wg_maps from)")


def one_working_subgroup_message(kernel: str, count: int, spelled: str = NUM_WARPS) -> str:
    """The warning of a kernel without wg_map launched with ``count`` > 1 subgroups."""
    return (f"{spelled}={count}: {kernel} has no wg_map, so its work is not split among subgroups: each "
            f"workgroup runs {count} subgroups, subgroup 0 does all the work and the others exit at entry (the "
            f"result is that of {spelled}=1); give its tiles a wg_map (sg_layout with {count} subgroups) to "
            f"split the work")


def barrier_refusal(kernel: str, count: int, spelled: str = NUM_WARPS) -> LaunchError:
    """The error of a kernel without wg_map that calls ``xt.barrier()``, launched with
    ``count`` > 1 subgroups: subgroups that exit at entry never reach its barriers."""
    return LaunchError(f"{spelled}={count}: {kernel} has no wg_map and calls xt.barrier(); its work would run in "
                       f"subgroup 0 only, and the subgroups that exit at entry never reach the barrier: pass "
                       f"{spelled}=1 (or leave it out), or give its tiles a wg_map of {count} subgroups")


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
