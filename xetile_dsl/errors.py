"""The error taxonomy: every error a user can see is one of these."""
from __future__ import annotations



class XeTileError(Exception):
    """Base class of all xetile_dsl errors."""


class CompilationError(XeTileError):
    """A mistake in a kernel, reported at the user's file, line and column.

    The message shows ``file:line:col``, the source line with a caret under the column,
    and what went wrong in the user's terms (and what would be legal)."""

    def __init__(self, message: str, filename: str = "<unknown>", line: int = 0, col: int = 0,
                 source_line: str | None = None):
        self.message, self.filename, self.line, self.col = message, filename, line, col
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.filename}:{self.line}:{self.col + 1}: error: {self.message}"
        if self.source_line is None:
            return head
        caret = " " * (len(self.source_line) - len(self.source_line.lstrip()))
        text = self.source_line.strip("\n")
        pad = " " * max(self.col, 0)
        return f"{head}\n    {text}\n    {pad}^" if caret is not None else head


class CacheKeyError(CompilationError):
    """A kernel reads a global whose value cannot be written into the kernel cache key
    (an arbitrary object, a module used as a value); reported at the line that reads it.
    Without this the kernel could be reused after the value changed."""


class LaunchError(XeTileError, ValueError):
    """A bad launch argument, detected before anything reaches the device."""


class UsageError(XeTileError, ValueError):
    """A bad argument to an xetile_dsl API call outside a kernel (an unknown target name, a
    malformed ``signature=``); the message lists what is legal."""


class ArrayTableError(UsageError, LaunchError):
    """A bad ``xd.array_table`` (entries of mixed dtypes, kinds or queues, a layout 2D
    block messages cannot tile) or a launch that mixes a table's queue with another: caught
    as a UsageError and, as a bad launch argument, as a LaunchError too.  The message names
    the entry and what is legal."""


# The errors below also derive from RuntimeError, their base before they joined the
# taxonomy, so that code catching RuntimeError keeps working.

class ToolError(XeTileError, RuntimeError):
    """An external tool (ocloc, iga64, spirv-val, spirv-dis) is missing or failed."""


class MissingStageError(XeTileError, KeyError):
    """``k.asm[stage]`` for a stage this kernel does not hold, saying why (a KeyError, so
    ``asm.get`` and ``in`` keep working)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DeviceError(XeTileError, RuntimeError):
    """No device matches, or a device cannot be used."""


class BuildError(XeTileError, RuntimeError):
    """The device runtime rejected a SPIR-V program (or its ABI does not fit the device)."""


class SpirvEmitError(XeTileError, RuntimeError):
    """The LLVM SPIR-V backend is missing, misconfigured, or rejected the module."""


class OutsideKernelError(XeTileError, RuntimeError):
    """A kernel-language operation (``xt.load_tile``, ``xt.barrier``, ...) called as plain
    Python, outside a ``@jit`` kernel."""


class LoweringError(XeTileError):
    """A pass found something the target cannot do; ``op`` carries the user's location."""

    def __init__(self, message: str, op=None):
        self.message, self.op = message, op
        super().__init__(message)


class InternalCompilerError(LoweringError):
    """A lowering pass failed unexpectedly: a compiler bug, not a mistake in the kernel.
    Located (like every LoweringError) at the op the pass was working on."""


class CompilationWarning(UserWarning):
    """Something that compiles but will not run as intended on the GPU (e.g. a kernel that
    will spill registers), reported like a CompilationError at the user's line."""

    @classmethod
    def at(cls, error: CompilationError) -> "CompilationWarning":
        """The warning with ``error``'s location, source line and caret."""
        return cls(str(error).replace(": error: ", ": warning: ", 1))


class AccumulatorSplitWarning(CompilationWarning):
    """A performance note: a K loop whose tile_mma accumulators exceed the register budget
    runs in several passes, each over part of the accumulator (B is read once per pass).
    Silence it with ``warnings.filterwarnings("ignore", category=AccumulatorSplitWarning)``."""


class RegisterSpillWarning(CompilationWarning):
    """The kernel's machine code spills registers even in the register-file mode the
    compiler chose: its tiles are too large for one subgroup (issued when the ISA is built,
    at the kernel's ``def``, with the spill size and what to change)."""


class PrefetchPlanWarning(UserWarning):
    """A performance note, located like a CompilationWarning but not one (the kernel runs
    as written): the compiler redistributed a workgroup's prefetch tile among its
    subgroups (a prefetch is only a hint) so that each subgroup issues one 2D block message
    and no two prefetch the same data.  Silence it with
    ``warnings.filterwarnings("ignore", category=PrefetchPlanWarning)``."""

    at = classmethod(CompilationWarning.at.__func__)


class PerLaneLayoutWarning(UserWarning):
    """A performance note from a launch: a device array (used in place) whose row pitch or
    first element 2D block messages cannot address is read and written per lane by its
    own kernel specialisation (another compile; slower loads and stores).  Said once per
    kernel, argument and layout, at the launch; silence it with
    ``warnings.filterwarnings("ignore", category=PerLaneLayoutWarning)``."""


class LoweringWarning(UserWarning):
    """A pass's warning; ``op`` carries the user's location (the compiler turns it into a
    located :class:`CompilationWarning`, or ``compiled_category``)."""

    compiled_category = CompilationWarning

    def __init__(self, message: str, op=None):
        self.message, self.op = message, op
        super().__init__(message)


class AccumulatorSplitNote(LoweringWarning):
    """xegpu-split-accumulators will split a K loop (becomes an :class:`AccumulatorSplitWarning`)."""

    compiled_category = AccumulatorSplitWarning


class PrefetchPlanNote(LoweringWarning):
    """xetile-wg-to-sg replaced a prefetch tile's wg_map (becomes a :class:`PrefetchPlanWarning`)."""

    compiled_category = PrefetchPlanWarning
