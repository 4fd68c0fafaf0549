"""Functions of unusual shapes for tests/frontend/test_kernel_source.py (their exact
layout is the point: do not reformat this file)."""
# flake8: noqa
import functools

import xetile_dsl.language as xt


def plain(a, BM: xt.constexpr):
    x = xt.program_id(0)
    return x


@functools.lru_cache(
maxsize=None)
def decorated_with_a_call_over_lines(a,
        b):
    return a + b


def ends_in_comments(a):
    x = a
    # a comment inside the body, at its indentation
    return x
    # a comment after the last statement
        # a deeper one
# and one in column 0


def ends_in_pass(a):
    if a:
        return 1
    else:
        pass


def ends_in_a_string(a):
    a = a + 1
    """a string
statement whose lines
reach column 0"""


def ends_in_a_tuple(a):
    a = a + 1
    (1,
2)


def one_line(a): return a


def with_nested(a):
    def inner(b):
        return [c for c in range(b)]
    return inner(a)


class Holder:
    @staticmethod
    def method(a):
        y = a
        return y
        # trailing


def make_closure():
    def closure(a):
        q = a

        # blank line above
        return q
    return closure
