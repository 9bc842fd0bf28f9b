"""Sync tools known to return at once: they may run on the event loop instead of a thread.

A sync tool runs in a thread so that it can never block the event loop; the hand-off costs
two thread wake-ups and a wake of the loop per call, more than the whole call of a tool
that only formats its arguments. This module recognises such a tool from its code, and only
when nothing it can do takes longer than reading its arguments did:

- a plain function (no method, partial, decorator, closure, generator or coroutine) whose
  source is at hand and is the code it runs;
- every parameter a `str`, `int`, `float` or `bool` (the executor binds the arguments with
  the tool's pydantic model first, so the values are exactly those builtin types, and an
  `int` is bounded by what JSON or the repairs can give it);
- one statement, `return EXPR`, after the docstring, where EXPR uses only its parameters
  and constants, f-strings without format specs, `+`, comparisons, `not`, unary signs,
  `and`/`or` and conditional expressions: no call, attribute, subscript, name outside
  its parameters, loop, `*`, `**` or shift, nothing whose time grows faster than the size
  of its arguments.

Everything else (any call, any other operator or statement, source not found) is run where
`execution.mode` says, as before. An operator who wants a thread for every sync tool sets
`execution_mode: thread` on it (or `execution.mode: process`, which this never overrides).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import typing
from collections.abc import Callable
from types import CodeType
from typing import Any

from registry.safe_ast import parse_python

__all__ = ["returns_at_once"]

_SCALARS = (str, int, float, bool)
_CONSTANTS = (str, int, float, bool, type(None))
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_UNARY = (ast.Not, ast.USub, ast.UAdd)


def returns_at_once(fn: Callable[..., Any]) -> bool:
    """Whether `fn` is a sync function that only returns an expression of its scalar
    arguments (see the module's docstring); False whenever that cannot be shown."""
    if not inspect.isfunction(fn):
        return False
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return False
    # No name is looked up (global, builtin or attribute), nothing is closed over, and no
    # nested code (a comprehension, a lambda) exists.
    if code.co_names or code.co_freevars or code.co_cellvars:
        return False
    if any(isinstance(const, CodeType) for const in code.co_consts):
        return False
    try:
        parameters = _scalar_parameters(fn)
        source = textwrap.dedent(inspect.getsource(fn))
        tree = parse_python(source)
    except Exception:  # no source, unreadable annotations, odd code: not known
        return False
    if parameters is None or len(tree.body) != 1:
        return False
    (definition,) = tree.body
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        return False
    if definition.name != fn.__name__:
        return False
    body = list(definition.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    return _bounded(body[0].value, parameters) and _runs(tree, code)


def _runs(tree: ast.Module, code: CodeType) -> bool:
    """Whether `code` is what the source in `tree` compiles to (the file may have changed
    since the function was loaded)."""
    try:
        compiled = compile(tree, code.co_filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    inner = [const for const in compiled.co_consts if isinstance(const, CodeType)]
    return (
        len(inner) == 1
        and inner[0].co_code == code.co_code
        and inner[0].co_consts == code.co_consts
        and inner[0].co_varnames == code.co_varnames
    )


def _scalar_parameters(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The names of `fn`'s parameters when each is annotated as a builtin scalar and none
    is `*args` or `**kwargs`; else None."""
    hints = typing.get_type_hints(fn)
    names = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            return None
        if hints.get(parameter.name) not in _SCALARS:
            return None
        names.append(parameter.name)
    return frozenset(names)


def _bounded(node: ast.expr, parameters: frozenset[str]) -> bool:
    """Whether evaluating `node` takes time bounded by the size of its arguments."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, _CONSTANTS)
    if isinstance(node, ast.Name):
        return node.id in parameters
    if isinstance(node, ast.JoinedStr):
        return all(_bounded(value, parameters) for value in node.values)
    if isinstance(node, ast.FormattedValue):
        return node.format_spec is None and _bounded(node.value, parameters)
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, ast.Add)
            and _bounded(node.left, parameters)
            and _bounded(node.right, parameters)
        )
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, _UNARY) and _bounded(node.operand, parameters)
    if isinstance(node, ast.BoolOp):
        return all(_bounded(value, parameters) for value in node.values)
    if isinstance(node, ast.Compare):
        return all(isinstance(op, _COMPARISONS) for op in node.ops) and all(
            _bounded(value, parameters) for value in (node.left, *node.comparators)
        )
    if isinstance(node, ast.IfExp):
        return all(_bounded(part, parameters) for part in (node.test, node.body, node.orelse))
    return False
