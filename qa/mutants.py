"""The mutants of one module: each a small change at one spot of its source, found by
walking its syntax tree.

A comparison flipped, a condition negated, a `not` dropped, `and`/`or` swapped, a return
value replaced (None, or the other boolean), a statement removed (a call, `del`, `raise`, an
assignment to state, `break`/`continue`), or a timeout removed. Logging calls and lines
marked `# pragma: no mutate` are never mutated; two mutants that make the same source are one.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re

_LOGGERS = frozenset({"log", "logger", "logging", "_log", "_logger"})
_NULL_CONTEXT = b'__import__("contextlib").nullcontext()'
_SYMBOLS = re.compile(rb"(?<![<>=!])(==|!=|<=|>=|<|>)(?![=<>])")
_WORDS = {
    "NotIn": re.compile(rb"\bnot\s+in\b"),
    "IsNot": re.compile(rb"\bis\s+not\b"),
    "In": re.compile(rb"\bin\b"),
    "Is": re.compile(rb"\bis\b"),
}
_FLIPS: dict[str, tuple[str, ...]] = {
    "Eq": ("!=",),
    "NotEq": ("==",),
    "Lt": ("<=", ">="),
    "LtE": ("<", ">"),
    "Gt": (">=", "<="),
    "GtE": (">", "<"),
    "In": ("not in",),
    "NotIn": ("in",),
    "Is": ("is not",),
    "IsNot": ("is",),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Mutant:
    """One small change to one module: bytes `start:end` of its source become `replacement`."""

    path: str
    line: int
    kind: str
    description: str
    start: int
    end: int
    replacement: bytes
    source: str = ""
    """The original line, for the report."""

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement + source[self.end :]


class Finder(ast.NodeVisitor):
    """Walks one module's syntax tree and proposes mutants."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.lines = source.splitlines()
        self.found: list[Mutant] = []

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> bytes:
        start, end = self.span(node)
        return self.source[start:end]

    def add(
        self, node: ast.AST, kind: str, description: str, start: int, end: int, new: bytes
    ) -> None:
        line = node.lineno  # type: ignore[attr-defined]
        if b"pragma: no mutate" in self.lines[line - 1]:
            return
        text = self.lines[line - 1].decode(errors="replace").strip()
        self.found.append(Mutant(self.path, line, kind, description, start, end, new, text))

    # Conditions ---------------------------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            return
        self._negate(node.test)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        for test in node.ifs:
            self._negate(test)
        self.generic_visit(node)

    def _negate(self, test: ast.expr) -> None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return  # dropping the `not` is the same mutant
        start, end = self.span(test)
        self.add(test, "negate", "condition negated", start, end, b"not (" + self.text(test) + b")")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            start, end = self.span(node)
            operand = b"(" + self.text(node.operand) + b")"
            self.add(node, "not", "`not` dropped", start, end, operand)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        old, new = (b"and", b"or") if isinstance(node.op, ast.And) else (b"or", b"and")
        start, end = self.span(node)
        pieces = []
        cursor = start
        for left, right in zip(node.values, node.values[1:], strict=False):
            gap_start, gap_end = self.span(left)[1], self.span(right)[0]
            gap = self.source[gap_start:gap_end]
            pieces.append(self.source[cursor:gap_start])
            pieces.append(re.sub(rb"\b" + old + rb"\b", new, gap, count=1))
            cursor = gap_end
        pieces.append(self.source[cursor:end])
        description = f"`{old.decode()}` → `{new.decode()}`"
        self.add(node, "boolop", description, start, end, b"".join(pieces))
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            gap_start, gap_end = self.span(left)[1], self.span(right)[0]
            name = type(op).__name__
            gap = self.source[gap_start:gap_end]
            pattern = _WORDS.get(name, _SYMBOLS)
            found = pattern.search(gap)
            if found is None:
                continue
            for flip in _FLIPS[name]:
                new = gap[: found.start()] + flip.encode() + gap[found.end() :]
                description = f"`{found.group().decode()}` → `{flip}`"
                self.add(node, "compare", description, gap_start, gap_end, new)
        self.generic_visit(node)

    # Values and statements ----------------------------------------------------------------

    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is not None and not _is_none(value):
            start, end = self.span(value)
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                flipped = b"False" if value.value else b"True"
                self.add(node, "return", f"return {flipped.decode()}", start, end, flipped)
            else:
                self.add(node, "return", "return None", start, end, b"None")
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        call = node.value.value if isinstance(node.value, ast.Await) else node.value
        if isinstance(call, ast.Call) and not _is_log_call(call):
            self._remove(node, "call removed")
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        self._remove(node, "`del` removed")
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._remove(node, "`raise` removed")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets):
            self._remove(node, "assignment to state removed")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._remove(node, "augmented assignment removed")
        self.generic_visit(node)

    def visit_Break(self, node: ast.Break) -> None:
        self._remove(node, "`break` removed")

    def visit_Continue(self, node: ast.Continue) -> None:
        self._remove(node, "`continue` removed")

    def _remove(self, node: ast.stmt, description: str) -> None:
        start, end = self.span(node)
        self.add(node, "statement", description, start, end, b"pass")

    # Timeouts -----------------------------------------------------------------------------

    def visit_With(self, node: ast.With) -> None:
        self._with_timeouts(node)
        self.generic_visit(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self._with_timeouts(node)
        self.generic_visit(node)

    def _with_timeouts(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            expr = item.context_expr
            if isinstance(expr, ast.Call) and "timeout" in _dotted(expr.func).lower():
                start, end = self.span(expr)
                self.add(expr, "timeout", "timeout context removed", start, end, _NULL_CONTEXT)

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg in ("timeout", "timeout_s") and not _is_none(keyword.value):
                start, end = self.span(keyword.value)
                self.add(node, "timeout", f"{keyword.arg}=None", start, end, b"None")
        self.generic_visit(node)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_log_call(call: ast.Call) -> bool:
    head = _dotted(call.func).split(".", 1)[0]
    return head in _LOGGERS or _dotted(call.func).endswith((".debug", ".info", ".warning"))


def _is_type_checking(test: ast.expr) -> bool:
    return _dotted(test).endswith("TYPE_CHECKING")


def mutants_of(path: str, source: bytes) -> list[Mutant]:
    """Every mutant of one module, in source order, duplicates (same result) dropped."""
    finder = Finder(path, source)
    finder.visit(ast.parse(source))
    seen: set[bytes] = set()
    unique = []
    for mutant in sorted(finder.found, key=lambda m: (m.start, m.end, m.description)):
        digest = hashlib.sha256(mutant.apply(source)).digest()
        if digest in seen or mutant.apply(source) == source:
            continue
        seen.add(digest)
        unique.append(mutant)
    return unique


def spread(items: list[Mutant], limit: int | None) -> list[Mutant]:
    """At most `limit` items, spread evenly over the list."""
    if limit is None or len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]
