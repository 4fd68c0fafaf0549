"""The compile targets a user can name, resolved once: the GPU table of :mod:`.target`,
its CPU-device flavours and aliases, and the registration of a new target.

``compile_target("cpu-arc")`` is what the compile entry (``compiler.py``) calls: the user's
string becomes one :class:`CompileTarget` (the :class:`~.target.Target` whose kernel is
built, and whether its GPU-only builtins are emulated for the CPU device), and the passes
receive that ``Target`` object.  Everything a user may spell (``pvc``, ``cpu``,
``cpu-arc``, ``interpret``, ``XETILE_CPU_FLAVOUR``'s values) comes from the table, so a
target added with :func:`register_target` is reachable under all of them at once.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import knobs
from . import launch_facts
from ..errors import UsageError
from .target import TARGETS, Target, get_target

#: the kernel function's attribute naming the target a saved module was built for
#: (re-exported by dialects/attributes.py with the other marks stages leave on the IR)
KERNEL_ATTR = "xetile.kernel"

#: the CPU device's flavour when ``XETILE_CPU_FLAVOUR`` is unset (``knobs.CPU_FLAVOUR``)
DEFAULT_CPU_FLAVOUR = knobs.CPU_FLAVOUR.default
#: the flavour the numpy interpreter's target name stands for (its subgroup size, DPAS shapes)
INTERPRETER_FLAVOUR = "pvc"


@dataclass(frozen=True)
class CompileTarget:
    """A compile target name resolved: ``gpu`` is the table entry whose kernel is built;
    ``emulate``: the kernel runs on the CPU device, its GPU-only builtins defined."""

    name: str
    gpu: Target
    emulate: bool

    @property
    def interpret(self) -> bool:
        return self.name == "interpret"

    def __str__(self) -> str:
        return self.name            # what the user wrote: messages and progress lines say it


def cpu_flavours() -> tuple[str, ...]:
    """The targets the CPU device runs (``cpu-<name>``), in table order."""
    return tuple(name for name, t in TARGETS.items() if t.cpu_flavour)


def target_aliases() -> dict[str, tuple[str, bool]]:
    """Every target name ``compile()`` accepts -> (GPU flavour, emulate builtins?): the GPU
    targets, the CPU device running a flavour, and the interpreter (nothing is lowered)."""
    return {**{name: (name, False) for name in TARGETS}, "cpu": (DEFAULT_CPU_FLAVOUR, True),
            **{f"cpu-{name}": (name, True) for name in cpu_flavours()}, "interpret": (INTERPRETER_FLAVOUR, False)}


def compile_target(name: str | CompileTarget) -> CompileTarget:
    """The :class:`CompileTarget` of a target name (one already resolved is returned)."""
    if isinstance(name, CompileTarget):
        return name
    aliases = target_aliases()
    try:
        flavour, emulate = aliases[name]
    except KeyError:
        raise UsageError(f"unknown target {name!r}; use one of {', '.join(aliases)}") from None
    return CompileTarget(name, TARGETS[flavour], emulate)


def as_target(target: Target | str) -> Target:
    """The Target a pass was given: the object the compile entry resolved, or a target's
    name (``opt -p 'xetile-blocking{target=arc}'``) looked up in the table."""
    return target if isinstance(target, Target) else get_target(target)


def kernel_target(fn, given: Target | str = "", default: str | None = "pvc") -> Target | None:
    """The Target a pass lowers function ``fn`` for: ``given`` (its option), else the
    target named by ``fn``'s :data:`KERNEL_ATTR` (hand-written or saved IR run through
    ``opt``), else ``default`` (None: no target)."""
    if given:
        return as_target(given)
    name = getattr(fn.attributes.get(KERNEL_ATTR), "data", None)
    name = name if name in TARGETS else default
    return get_target(name) if name else None


class Registration:
    """A target added by :func:`register_target`; ``unregister()`` (or leaving the ``with``
    block) takes it out again."""

    def __init__(self, target: Target):
        self.target = target

    def unregister(self) -> None:
        if TARGETS.get(self.target.name) is self.target:
            del TARGETS[self.target.name]
            launch_facts.REGISTERED_FACTS.pop(self.target.name, None)

    def __enter__(self) -> Target:
        return self.target

    def __exit__(self, *exc) -> None:
        self.unregister()


def register_target(target: Target) -> Registration:
    """Add ``target`` to the table: compile targets ``target.name`` (and ``cpu-<name>``
    when ``target.cpu_flavour``) then build for it; the returned :class:`Registration`
    takes it out again.  A UsageError for a name already taken, 2D block limits stricter
    than the launch's narrow-row rule (:mod:`.launch_facts`, read without the tables) or DPAS
    flavours whose largest repeat counts differ (:meth:`~.target.Target.dpas_rows_problem`).

    The kernel cache key's target part carries a registered target's facts
    (:func:`.launch_facts.target_key_part`; a built-in target's are in the compiler's
    sources, which the key stamps), so one name registered with other facts compiles anew."""
    if target.name in TARGETS or target.name in ("cpu", "interpret") or target.name.startswith("cpu-"):
        raise UsageError(f"target name {target.name!r} is taken; the targets are {', '.join(target_aliases())}")
    problem = target.block2d_limits.launch_rule_problem() if target.has_2d_block_io else None
    if problem:
        raise UsageError(f"target {target.name!r}: its 2D block limits are stricter than the launch's narrow-row "
                         f"rule ({problem}); raise the rule's numbers in targets/launch_facts.py")
    problem = target.dpas_rows_problem()
    if problem:
        raise UsageError(f"target {target.name!r}: {problem}")
    TARGETS[target.name] = target
    launch_facts.REGISTERED_FACTS[target.name] = repr(target)
    return Registration(target)
