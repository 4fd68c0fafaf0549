"""A kernel's source is read without Python's tokenizer (frontend/source.py ``_def_block``:
a warm first launch) and is exactly what ``inspect.getsourcelines`` reads, for
every shape of function: decorators over several lines, trailing comments, ``pass``,
strings and tuples whose lines reach column 0, one-liners, nested functions and methods;
unusual shapes fall back to inspect, so the text (part of the cache key) and the AST (its
line numbers and columns in the user's file) never differ."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap

import pytest

from xetile_dsl.frontend import source
from xetile_dsl.frontend.source import KernelSource

from . import source_shapes as shapes

FUNCTIONS = [shapes.plain, shapes.decorated_with_a_call_over_lines.__wrapped__, shapes.ends_in_comments,
             shapes.ends_in_pass, shapes.ends_in_a_string, shapes.ends_in_a_tuple, shapes.one_line,
             shapes.with_nested, shapes.Holder.method, shapes.make_closure()]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_the_source_is_what_inspect_reads(fn):
    lines, first = inspect.getsourcelines(fn)
    src = KernelSource.of(fn)
    assert src.text == textwrap.dedent("".join(lines))
    assert src.first_line == first
    # the AST's positions are the file's: each statement's first line starts with its text
    indent = len(lines[0]) - len(lines[0].lstrip())
    for node in ast.walk(src.tree):
        if isinstance(node, ast.stmt):
            line = src.lines[node.lineno - 1]
            assert node.col_offset >= indent and line[node.col_offset:].strip(), (node.lineno, line)
    assert src.tree.lineno in range(first, first + len(lines)) and src.tree.end_lineno < first + len(lines)


@pytest.mark.parametrize("fn", [shapes.plain, shapes.ends_in_comments, shapes.ends_in_pass, shapes.one_line,
                                shapes.with_nested, shapes.Holder.method, shapes.make_closure()],
                         ids=lambda fn: fn.__name__)
def test_common_shapes_need_no_tokenizer(fn, monkeypatch):
    """No call to inspect.getsourcelines (which tokenizes) for these."""
    expected = inspect.getsourcelines(fn)

    def refuse(_fn):
        raise AssertionError("inspect.getsourcelines was called")
    monkeypatch.setattr(source.inspect, "getsourcelines", refuse)
    src = KernelSource.of(fn)
    assert src.text == textwrap.dedent("".join(expected[0])) and src.first_line == expected[1]


def test_unusual_sources_fall_back_to_inspect():
    """Tab indentation: the block finder stands aside and inspect reads the source."""
    text = "def tabbed(a):\n\tx = a\n\t# a comment\n\treturn x\n"
    filename = "<tabbed kernel>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {}
    exec(compile(text, filename, "exec"), scope)
    try:
        assert source._def_block(scope["tabbed"]) is None
        assert KernelSource.of(scope["tabbed"]).text == text
    finally:
        linecache.cache.pop(filename, None)
