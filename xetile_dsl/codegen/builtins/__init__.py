"""The builtin functions codegen calls for GPU-only operations (DPAS, 2D block IO,
subgroup block IO, address payloads, transposed reads): each module builds one family,
as a declaration under the Intel OpenCL name for the GPU or as a definition written from
the specification for the CPU device.  :class:`~.intel.IntelBuiltins` is the one entry
point the emitters use; :mod:`.texts` keeps the emulated bodies' text per process and
:mod:`.mangle` writes the Itanium-mangled names.  Nothing here reads the IR being compiled.
"""
