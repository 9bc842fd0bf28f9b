"""Direct calls: a program whose every call of a function is awaited at once, at its top
level, runs those calls as plain calls.

`await f(x)` in the sandbox costs two round trips to its worker process (the call, then the
wait for its future); `f(x)` answered with its value costs one. Where the program can tell
no difference, the `await` is taken out before the program runs: a call awaited at once
at the top level, where no task of the program's own can run meanwhile. A function also
gathered there (`await asyncio.gather(f(1), f(2))`) keeps its `await`s, and its calls run as
tasks, in parallel. Any other use of a function's name (kept to await later, passed around,
called from a function the program defines, bound by the program) leaves the program as it
was, so calls made and awaited later still start when the program waits, as tasks do.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Direct:
    """A program as it runs, and the functions it calls directly (not awaited)."""

    code: str
    names: frozenset[str] = frozenset()


def direct(code: str, functions: Collection[str]) -> Direct:
    """`code` with the `await` taken out of each call of a function whose every use is a call
    awaited at once at the top level, when every other use of the functions is a call
    gathered there (`await asyncio.gather(...)`); else `code` as it is."""
    try:
        tree = ast.parse(code)  # top-level await parses (only compiling refuses it)
    except (SyntaxError, ValueError):
        return Direct(code)  # the sandbox says what is wrong
    uses = _Uses(frozenset(functions))
    uses.visit(tree)
    awaits = [a for a in uses.awaits if a[0] not in uses.gathered]
    if uses.spoiled or not awaits:
        return Direct(code)
    lines = code.encode().splitlines(keepends=True)  # as the parser counts lines
    for _, line, start, end in awaits:
        text = lines[line - 1]
        if not _AWAIT.fullmatch(text[start:end]):  # `await (f())` and the like
            return Direct(code)
        # Blanked where something stands before it on its line (columns stay as they
        # were); dropped where it starts the line's statement (blanks would indent it).
        blank = b" " * (end - start) if text[:start].strip() else b""
        lines[line - 1] = text[:start] + blank + text[end:]
    return Direct(b"".join(lines).decode(), frozenset(name for name, *_ in awaits))


def _is_gather(function: ast.expr) -> bool:
    return (
        isinstance(function, ast.Attribute)
        and function.attr == "gather"
        and isinstance(function.value, ast.Name)
        and function.value.id == "asyncio"
    )


_AWAIT = re.compile(rb"await[ \t]+")


class _Uses(ast.NodeVisitor):
    """Where the program uses the functions' names."""

    def __init__(self, functions: frozenset[str]) -> None:
        self._functions = functions
        self._depth = 0
        """Inside a function, lambda or class the program defines."""
        self._gathering = False
        """Inside the arguments of an `await asyncio.gather(...)` at the top level."""
        self.awaits: list[tuple[str, int, int, int]] = []
        """Each call awaited at once: its function, line, and the `await`'s bytes on it."""
        self.gathered: set[str] = set()
        """Functions called in a gather: they stay awaited (and run as tasks)."""
        self.spoiled = False
        """Some use of a name is neither of those: the program stays as it is."""

    def visit_Await(self, node: ast.Await) -> None:
        call = node.value
        if self._gathering:  # a wait while gathered calls are made: they start during it
            self.spoiled = True
        elif isinstance(call, ast.Call) and _is_gather(call.func) and not self._depth:
            self._gathering = True
            for argument in [*call.args, *call.keywords]:
                self.visit(argument)
            self._gathering = False
            return
        elif (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in self._functions
        ):
            if self._depth or node.lineno != call.lineno:
                self.spoiled = True
            else:
                self.awaits.append((call.func.id, node.lineno, node.col_offset, call.col_offset))
            for argument in [*call.args, *call.keywords]:
                self.visit(argument)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if self._gathering and isinstance(node.func, ast.Name) and node.func.id in self._functions:
            self.gathered.add(node.func.id)
            for argument in [*node.args, *node.keywords]:
                self.visit(argument)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self._functions:  # not the callee of an awaited call (handled above)
            self.spoiled = True

    def _nested(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._bound(node.name)
        self._nested(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._bound(node.name)
        self._nested(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bound(node.name)
        self._nested(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._nested(node)

    def visit_arg(self, node: ast.arg) -> None:
        self._bound(node.arg)

    def visit_alias(self, node: ast.alias) -> None:
        self._bound((node.asname or node.name).split(".")[0])

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None:
            self._bound(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name is not None:
            self._bound(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name is not None:
            self._bound(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest is not None:
            self._bound(node.rest)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self._bound(name)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            self._bound(name)

    def _bound(self, name: str) -> None:
        if name in self._functions:
            self.spoiled = True


__all__ = ["Direct", "direct"]
