"""Loop-carried names that start as Python numbers take the type the loop gives them.

``acc = 0`` before ``for i in range(n): acc += x[i, 0]`` over a float32 array: the body
makes ``acc`` a float32 scalar, so the ``0`` it starts from must be one too (Triton's
rule, and Python's result).  A number carried into a loop is first materialised with
its own type (int -> index, float -> f32, bool -> i1); when the body yields the name
with another scalar or tile type, :func:`check_carried` in :mod:`.control` raises
:class:`Retype` and the loop is lowered again with the number as a constant of that
type (a splat tile for a tile).  The IR of the abandoned attempt is erased.  A name that
started as an SSA value keeps the strict rule (its type may not change in the loop).
``if``/``else`` needs none of this: a number in one branch takes the other branch's type.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..errors import CompilationError
from . import semantic as sem

#: attempts per loop: each retypes at least one carried number, so this bounds the names
#: that change type in one loop (deeper nests retry per loop)
MAX_ATTEMPTS = 8


class Retype(CompilationError):
    """Raised inside a loop's lowering: carried ``name`` (a number before the loop) is
    yielded as ``elem``/``shape`` (shape None for a scalar)."""

    def __init__(self, name: str, elem, shape):
        self.name, self.elem, self.shape = name, elem, shape
        super().__init__(f"internal: loop-carried {name!r} is retyped")


def materialize_numbers(builder, names, node, retyped: dict, materialize) -> None:
    """Carried ``names`` holding Python numbers become constants: of the type a previous
    attempt found (``retyped``), else of the number's own type; each is recorded in
    ``builder.literal_inits`` so that :func:`retype_or_none` recognises it."""
    for name in names:
        value = builder.env[name]
        if not sem.is_const(value):
            continue
        if name in retyped:
            elem, shape = retyped[name]
            sem.check_fits(builder, value, elem, node, f"the initial value of {name!r}")
            const = sem.coerce(builder, value, elem, shape, node)
        else:
            const = materialize(builder, value, node)
        builder.literal_inits[const] = name
        builder.env[name] = const


def retype_or_none(builder, name: str, before, after):
    """The :class:`Retype` to raise when carried ``before`` was a number and ``after`` (what
    the body yields) is a scalar or tile of another type; None otherwise."""
    if builder.literal_inits.get(before) != name or not (sem.is_scalar(after) or sem.is_tile(after)):
        return None
    return Retype(name, sem.elem_of(after), sem.shape_of(after))


def lower_retyping(builder, node, lower):
    """Run ``lower(retyped)`` (one attempt at a loop), again with the carried numbers
    retyped while an attempt raises :class:`Retype`; the IR and names of a failed attempt
    are rolled back."""
    retyped: dict = {}
    for _ in range(MAX_ATTEMPTS):
        block, env, emitted = builder.block, dict(builder.env), builder.ops_emitted
        mark = block.last_op
        try:
            return lower(retyped)
        except Retype as change:
            if retyped.get(change.name) == (change.elem, change.shape):
                raise builder.error(node, f"internal compiler error: {change.name!r} keeps changing type in "
                                    f"this loop") from None
            retyped[change.name] = (change.elem, change.shape)
            _erase_after(block, mark)
            builder.block, builder.env, builder.ops_emitted = block, env, emitted
    raise builder.error(node, f"more than {MAX_ATTEMPTS} names of this loop start as numbers and change type "
                        f"in it; give them initial values of the type they take (e.g. 0.0 for a float)")


@contextmanager
def discarded_on_retype(*blocks):
    """Erase the loop's own ``blocks`` when its attempt raises :class:`Retype`, so that the
    values they used (the array, the bounds) keep no users from the abandoned IR."""
    try:
        yield
    except Retype:
        for block in blocks:
            for op in reversed(list(block.ops)):
                block.detach_op(op)
                op.erase(safe_erase=False)
        raise


def _erase_after(block, mark) -> None:
    """Erase the ops ``block`` gained after ``mark`` (None: all of them), last first."""
    while block.last_op is not mark:
        op = block.last_op
        block.detach_op(op)
        op.erase(safe_erase=False)


__all__ = ["MAX_ATTEMPTS", "Retype", "discarded_on_retype", "lower_retyping", "materialize_numbers", "retype_or_none"]
