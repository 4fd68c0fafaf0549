"""Which launch arguments a remembered launch can be re-enqueued with, told cheaply.

A launch memo (jit.py ``JITFunction._last_call``, loaded_kernel.py ``LoadedKernel._memo``)
keeps the last launch.  It identifies that launch's arguments by *tokens*: a weak
reference to each device array (so the memo keeps no caller's array alive, and is
emptied when one dies: :func:`forgetter`) and each scalar's type and value.  A device
array launch is re-enqueued by its replay (runtime/replay.py), which reads the tokens'
weak references; :func:`compare_args` tells, in a few attribute reads, whether a new
call of a remembered numpy launch has the very same arguments, only new scalar values,
or others.

A numpy array (copied in and out at every launch, so never the "same" argument) can be
given the token ``(None, None)``: any numpy array matches it, and the launcher's plan
(loaded_kernel.py ``LoadedKernel._launch_planned``) checks its dtype, shape and strides.
"""
from __future__ import annotations

import weakref
from math import copysign

import numpy as np

from .arrays import is_pyopencl_array_type


#: the token of a numpy array (see the module's doc)
NUMPY_TOKEN = (None, None)


def arg_tokens(args, on_death=None, numpy: bool = False) -> tuple | None:
    """What identifies a launch's arguments for reuse: a weak reference to each device
    array's ``usm_ndarray`` (for dpnp, its current one, which changes if it is reshaped in
    place) or pyopencl array (with its buffer, offset, shape, strides and queue, plain
    attributes that could be rebound), each scalar's type and value.  ``on_death(ref)`` is
    called when one of those arrays dies.  None when an argument cannot be identified
    cheaply (with ``numpy``, a numpy array is :data:`NUMPY_TOKEN`)."""
    tokens = []
    for value in args:
        cls = value.__class__
        if cls is int or cls is float:
            tokens.append((cls, value))
        elif cls is np.ndarray and numpy:
            tokens.append(NUMPY_TOKEN)
        elif hasattr(cls, "get_array"):
            tokens.append((None, weakref.ref(value.get_array(), on_death)))
        elif hasattr(cls, "usm_data") and hasattr(cls, "_element_offset"):
            tokens.append((None, weakref.ref(value, on_death)))
        elif is_pyopencl_array_type(cls):
            tokens.append((None, weakref.ref(value, on_death), _pyopencl_state(value)))
        else:
            return None
    return tuple(tokens)


def _pyopencl_state(array) -> tuple:
    """What a pyopencl array's kernel arguments are made from."""
    return (array.base_data, array.offset, array.shape, array.strides, array.queue)


#: what :func:`compare_args` finds: other arrays (or types), the very same arguments, or the
#: same arrays with some scalar values changed (types unchanged)
DIFFERENT, SAME, NEW_SCALARS = 0, 1, 2


def compare_args(args, tokens) -> int:
    """How ``args`` relate to the arguments ``tokens`` describe (see :func:`arg_tokens`)."""
    if len(args) != len(tokens):
        return DIFFERENT
    found = SAME
    for value, tok in zip(args, tokens):
        if tok[0] is None:
            ref = tok[1]
            if ref is None:                     # NUMPY_TOKEN
                if value.__class__ is not np.ndarray:
                    return DIFFERENT
                continue
            array = ref()
            if array is None:
                return DIFFERENT
            if value is not array and getattr(value, "_array_obj", None) is not array:
                # (a dpnp array's usm_ndarray is its ``_array_obj``: read without a call)
                get_array = getattr(value, "get_array", None)
                if get_array is None or get_array() is not array:
                    return DIFFERENT
            elif len(tok) == 3 and _pyopencl_state(value) != tok[2]:
                return DIFFERENT
        elif value.__class__ is not tok[0]:
            return DIFFERENT
        elif value != tok[1] or (not value and tok[0] is float and copysign(1.0, value) != copysign(1.0, tok[1])):
            found = NEW_SCALARS                 # (0.0 == -0.0, but they are other arguments)
    return found


def forgetter(owner, attribute: str, tokens_at: int):
    """A weak-reference callback that empties the memo ``owner.<attribute>`` (a tuple whose
    item ``tokens_at`` came from :func:`arg_tokens`) when one of its arrays dies, so that
    the memo's prepared launch (which holds the arrays' device memory) goes with them.
    ``owner`` itself is held weakly."""
    owner_ref = weakref.ref(owner)

    def forget(dead) -> None:
        holder = owner_ref()
        memo = getattr(holder, attribute, None)
        if memo is not None and any(token[0] is None and token[1] is dead for token in memo[tokens_at]):
            setattr(holder, attribute, None)

    return forget
