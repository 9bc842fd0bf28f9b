"""Dependencies run proxy -> policies -> registry, and only through each package's `__all__`."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("proxy", "policies", "registry")
ALLOWED = {
    "proxy": {"policies", "registry"},
    "policies": {"registry"},
    "registry": set(),
}


@dataclass(frozen=True)
class Import:
    """One import of a first-party package found in a source file."""

    where: str
    line: int
    module: str
    names: tuple[str, ...]

    @property
    def package(self) -> str:
        return self.module.split(".")[0]

    def __str__(self) -> str:
        names = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.where}:{self.line}: {self.module}{names}"


def imports_of(source: str, where: str) -> Iterator[Import]:
    """Absolute imports of first-party packages, anywhere in the file (functions included)."""
    for node in ast.walk(ast.parse(source, filename=where)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(where, node.lineno, alias.name, ())
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield Import(where, node.lineno, node.module, tuple(a.name for a in node.names))


def first_party(found: Iterator[Import]) -> list[Import]:
    return [i for i in found if i.package in PACKAGES]


def package_files(package: str) -> list[Path]:
    files = sorted((REPO / package).rglob("*.py"))
    assert files, f"no sources found for {package}"
    return files


def all_imports(package: str) -> list[Import]:
    found: list[Import] = []
    for path in package_files(package):
        where = path.relative_to(REPO).as_posix()
        found += first_party(imports_of(path.read_text(encoding="utf-8"), where))
    return found


def declared_all(package: str) -> list[str] | None:
    """The literal `__all__` of a package's `__init__.py`, read without importing it."""
    tree = ast.parse((REPO / package / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            assert node.value is not None
            return list(ast.literal_eval(node.value))
    return None


def violations(package: str, found: list[Import]) -> list[str]:
    """Every import in `package` that breaks the dependency direction or the public API rule."""
    problems = []
    for imp in found:
        other = imp.package
        if other == package:
            continue
        if other not in ALLOWED[package]:
            problems.append(f"{imp}: {package} must not depend on {other}")
        elif imp.module != other:
            problems.append(f"{imp}: import from {other}'s __init__, not {imp.module}")
        else:
            public = set(declared_all(other) or ())
            hidden = [n for n in imp.names if n not in public]
            if hidden:
                problems.append(f"{imp}: not in {other}.__all__: {', '.join(hidden)}")
    return problems


@pytest.mark.parametrize("package", PACKAGES)
def test_dependencies_run_one_way_through_public_apis(package: str) -> None:
    assert violations(package, all_imports(package)) == []


def test_registry_and_policies_know_nothing_of_http_front_ends() -> None:
    assert not [i for i in all_imports("registry") if i.package in {"proxy", "policies"}]
    assert not [i for i in all_imports("policies") if i.package == "proxy"]


@pytest.mark.parametrize("package", PACKAGES)
def test_package_init_declares_all_and_defines_each_name(package: str) -> None:
    exported = declared_all(package)
    assert exported, f"{package}/__init__.py must declare a non-empty __all__"
    assert len(exported) == len(set(exported)), "duplicate names in __all__"
    module = importlib.import_module(package)
    assert [name for name in exported if not hasattr(module, name)] == []


@pytest.mark.parametrize(
    ("package", "source", "expected"),
    [
        ("proxy", "from registry.tool import Tool", "import from registry's __init__"),
        ("proxy", "import registry.tool", "import from registry's __init__"),
        ("proxy", "from registry import _private", "not in registry.__all__: _private"),
        ("registry", "from policies import RulePolicy", "registry must not depend on policies"),
        ("registry", "def f():\n    import proxy\n", "registry must not depend on proxy"),
        ("policies", "from proxy.errors import ProxyError", "policies must not depend on proxy"),
    ],
)
def test_the_checker_catches_violations(package: str, source: str, expected: str) -> None:
    problems = violations(package, first_party(imports_of(source, "example.py")))
    assert len(problems) == 1
    assert expected in problems[0]


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("proxy", "from registry import Tool, ToolRegistry\nfrom policies import RulePolicy"),
        ("proxy", "from .errors import ProxyError\nfrom proxy.sse import encode"),
        ("registry", "from registry.tool import Tool\nimport orjson"),
    ],
)
def test_the_checker_accepts_allowed_imports(package: str, source: str) -> None:
    assert violations(package, first_party(imports_of(source, "example.py"))) == []


def test_only_the_gate_runs_tools() -> None:
    """Every path that executes a tool goes through policies/gate.py: nothing else in the
    proxy or the policies calls an executor's `execute` or `execute_many`."""
    callers = []
    for package in ("proxy", "policies"):
        for path in package_files(package):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("execute", "execute_many")
                ):
                    callers.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert callers and all(c.startswith("policies/gate.py:") for c in callers), callers


# Inside `proxy/`, each role folder may import only what its role needs. The keys are the
# folders; the values, the modules of other folders each may not import (a prefix forbids the
# folder, a longer name one module in it); `ALLOWED_INSIDE` lists the exceptions.
ROLES = (
    "server",
    "turn",
    "approvals",
    "state",
    "fronts",
    "upstreams",
    "admin",
    "telemetry",
    "codemode",
)
FORBIDDEN = {
    # The sandbox and the tools' Python face: a leaf the turn uses, knowing no request.
    "codemode": tuple(f"proxy.{role}" for role in ROLES if role != "codemode"),
    "turn": ("proxy.server", "proxy.fronts", "proxy.admin", "proxy.telemetry"),
    "approvals": ("proxy.server", "proxy.fronts", "proxy.admin", "proxy.telemetry"),
    "state": (
        "proxy.server",
        "proxy.fronts",
        "proxy.turn",
        "proxy.approvals",
        "proxy.upstreams",
        "proxy.admin",
        "proxy.telemetry",
    ),
    "upstreams": (
        "proxy.server",
        "proxy.fronts",
        "proxy.approvals",
        "proxy.admin",
        "proxy.telemetry",
    ),
    "fronts": ("proxy.server", "proxy.admin", "proxy.telemetry"),
    "telemetry": ("proxy.fronts", "proxy.admin"),
    "admin": ("proxy.fronts",),
    "server": (),
}
ALLOWED_INSIDE = {
    # The plumbing the edge hands every front: ASGI helpers, the request's context, the
    # services bundle and the Host/Origin check; never the app, its routes or middleware.
    "fronts": (
        "proxy.server.asgi",
        "proxy.server.context",
        "proxy.server.services",
        "proxy.server.hosts",
    ),
    # The records a store holds and the seams of the upstream's stream are shared shapes.
    "state": ("proxy.state",),
}


def proxy_module_imports(where: str, source: str) -> Iterator[tuple[int, str]]:
    """Every `proxy.…` module a file under proxy/ imports, relative imports resolved."""
    package = where.removesuffix(".py").split("/")[:-1]
    for node in ast.walk(ast.parse(source, filename=where)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
            names = [f"{module}.{a.name}" for a in node.names] if not node.module else [module]
            for name in names:
                yield node.lineno, name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("proxy"):
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("proxy"):
                    yield node.lineno, alias.name


def role_problems(role: str, where: str, source: str) -> list[str]:
    """The imports of one file of `proxy/<role>/` that its role forbids."""
    problems = []
    allowed = ALLOWED_INSIDE.get(role, ())
    for line, module in proxy_module_imports(where, source):
        if any(module == a or module.startswith(a + ".") for a in allowed):
            continue
        if any(module == p or module.startswith(p + ".") for p in FORBIDDEN[role]):
            problems.append(f"{where}:{line}: proxy/{role} must not import {module}")
    return problems


def role_violations(role: str) -> list[str]:
    problems = []
    for path in sorted((REPO / "proxy" / role).rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        problems += role_problems(role, where, path.read_text(encoding="utf-8"))
    return problems


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        ("proxy/turn/loop.py", "from ..server.app import create_app", "proxy.server.app"),
        ("proxy/turn/loop.py", "from ..fronts import chat", "proxy.fronts"),
        ("proxy/state/redis.py", "from ..turn.continuations import restore", "proxy.turn"),
        ("proxy/state/redis.py", "from proxy.approvals.queue import ApprovalQueue", "approvals"),
        ("proxy/fronts/chat/handler.py", "from ...server.routes import FRONTS", "server.routes"),
        ("proxy/upstreams/router.py", "from ..approvals import flow", "proxy.approvals"),
    ],
)
def test_the_role_checker_catches_violations(where: str, source: str, expected: str) -> None:
    role = where.split("/")[1]
    problems = role_problems(role, where, source)
    assert len(problems) == 1 and expected in problems[0]


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("proxy/turn/loop.py", "from ..upstreams.base import Upstream\nfrom ..errors import E"),
        ("proxy/state/redis.py", "from .base import TurnStore\nfrom ..config import Settings"),
        ("proxy/fronts/chat/handler.py", "from ...server.asgi import read_body"),
    ],
)
def test_the_role_checker_accepts_allowed_imports(where: str, source: str) -> None:
    assert role_problems(where.split("/")[1], where, source) == []


@pytest.mark.parametrize("role", ROLES)
def test_each_role_folder_imports_only_what_its_role_needs(role: str) -> None:
    assert role_violations(role) == []


def test_proxy_keeps_few_loose_modules() -> None:
    """`proxy/` says what it holds: role folders and the shared config package, and only the
    errors and SSE codec (plus the package's init and `__main__`) loose beside them."""
    loose = sorted(p.name for p in (REPO / "proxy").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "errors.py", "sse.py"]
    folders = {p.name for p in (REPO / "proxy").iterdir() if (p / "__init__.py").exists()}
    assert folders == {*ROLES, "config"}
