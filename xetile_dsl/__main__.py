"""Command line: ``python -m xetile_dsl <subcommand> ...`` (or the ``xetile-dsl`` script).

Subcommands live in :data:`SUBCOMMANDS`: name -> (help, add_arguments, run).  To add one
(``opt``, ``compile``, ...) write its two functions and register it there (or call
:func:`register` from another module before :func:`main` runs).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from xetile_dsl.cli import explain, opt
from xetile_dsl.runtime import cache as kernel_cache
from xetile_dsl.runtime import devices
from xetile_dsl.tools import locate


# --- devices --------------------------------------------------------------------------

def _devices_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("dpctl", "pyopencl"), default=None,
                        help="runtime API to search with (default: XETILE_BACKEND, else dpctl then pyopencl)")


def _devices_run(args: argparse.Namespace) -> int:
    try:
        print(devices.list_devices(args.backend))
        chosen = devices.get_device(backend=args.backend)   # listed above: name it, do not list it again
        print(f"selected: {chosen.selector} ({chosen.backend}; XETILE_DEVICE, else the first listed)")
    except devices.DeviceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


# --- cache ----------------------------------------------------------------------------

def _cache_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "clear"), help="show or delete the compiled-kernel cache")
    parser.add_argument("--dir", default=None, help="cache directory (default: XETILE_CACHE_DIR or ~/.cache/xetile_dsl/kernels)")


def _cache_run(args: argparse.Namespace) -> int:
    cache = kernel_cache.KernelCache(args.dir)
    if args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.directory}")
        return 0
    entries = cache.entries()
    print(f"{cache.directory}: {len(entries)} entries")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["created"])) if e["created"] else "?"
        print(f"  {e['key'][:16]}  {e['name']:<24} {e['target']:<8} {e['bytes']:>9} B  {when}  "
              f"{', '.join(e['files'])}")
    return 0


# --- opt -------------------------------------------------------------------------------

def _opt_args(parser: argparse.ArgumentParser) -> None:
    opt.add_arguments(parser)


def _opt_run(args: argparse.Namespace) -> int:
    return opt.run(args)


# --- install-tools ---------------------------------------------------------------------

def _install_tools_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tools-dir", default=None,
                        help="folder to install ocloc into (default: where xetile_dsl looks, XETILE_TOOLS_DIR)")
    parser.add_argument("--dry-run", action="store_true", help="print the installer's command and folder; run nothing")


def _install_tools_run(args: argparse.Namespace) -> int:
    tools = args.tools_dir or str(locate.tools_dir())
    command = ["bash", str(locate.installer_script())]
    print(f"XETILE_TOOLS_DIR={tools} {' '.join(command)}")
    if args.dry_run:
        return 0
    env = {**os.environ, "XETILE_TOOLS_DIR": tools}
    return subprocess.call(command, env=env)


#: name -> (help, add_arguments(parser), run(args) -> exit code)
SUBCOMMANDS = {
    "opt": ("parse, verify, run passes and print MLIR (like mlir-opt)", _opt_args, _opt_run),
    "devices": ("list devices in discovery order and what is missing", _devices_args, _devices_run),
    "cache": ("list or clear the compiled-kernel cache", _cache_args, _cache_run),
    "install-tools": ("install Intel's offline compiler ocloc (and iga64) for the ISA: k.asm['isa'], "
                      "k.report() (Debian/Ubuntu apt-get, as root)", _install_tools_args, _install_tools_run),
    "explain": ("compile a @jit kernel for a GPU target and print its static ISA report", explain.add_arguments, explain.run),
}


def register(name: str, help_text: str, add_arguments, run) -> None:
    """Add a subcommand (for modules that contribute one)."""
    SUBCOMMANDS[name] = (help_text, add_arguments, run)


def program_name() -> str:
    """How the command was invoked, for usage lines: ``python -m xetile_dsl`` (``sys.argv[0]``
    is then this file) or the console script's name (``xetile-dsl``)."""
    invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if not invoked or invoked in ("__main__.py", "-c") or invoked.startswith("python"):
        return "python -m xetile_dsl"
    return invoked


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with one subparser per entry of :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(prog=program_name(), description="xetile_dsl command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments, run) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        add_arguments(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; returns the exit code."""
    args = build_parser().parse_args(argv)
    return args._run(args)


if __name__ == "__main__":
    sys.exit(main())
