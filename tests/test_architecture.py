"""The rooms and the one-way arrows between them (docs/architecture.md), checked on the source's import statements.

gateway -> runtime -> backends -> controllers; `specgate.config`, `specgate.errors` and `specgate.sse` are leaves
every room may use except `controllers`, which gets its own frozen settings and does no I/O; `offline` (tools the
server never runs) may use any room, and no server room imports it. Imports under `if TYPE_CHECKING:` count too:
the arrows are about design, not only about what runs.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {
    "gateway": "gateway",
    "runtime": "runtime",
    "backends": "backends",
    "controllers": "controllers",
    "dashboards": "dashboards",
    "offline": "offline",
}
LEAVES = {"specgate.config", "specgate.errors", "specgate.sse"}
# Command-line entry points: at module level they follow gateway's rules; inside a subcommand's function they may
# import the offline tools (so `specgate serve` never loads them).
ENTRY = {"specgate.__main__": "gateway", "specgate.gateway.cli": "gateway"}
# Which specgate rooms (and leaves) each room may import.
ALLOWED = {
    "gateway": {"gateway", "runtime", "backends", "controllers", "leaves"},
    "runtime": {"runtime", "backends", "controllers", "leaves"},
    "backends": {"backends", "controllers", "leaves"},
    "controllers": {"controllers"},
    "dashboards": {"dashboards", "runtime", "backends", "leaves"},
    "offline": {"offline", "gateway", "runtime", "backends", "controllers", "dashboards", "leaves"},
    "leaves": set(),
}
# Third-party packages that mean I/O, a web framework or config: never in the pure layer.
IO_PACKAGES = {"fastapi", "starlette", "uvicorn", "httpx", "httptools", "redis", "pydantic", "yaml", "opentelemetry"}
IO_STDLIB = {"socket", "asyncio", "subprocess", "urllib", "http", "ssl", "os", "shutil", "pathlib", "logging"}


def _modules() -> dict[str, Path]:
    out = {f"specgate.{p.stem}": p for p in (ROOT / "specgate").glob("*.py") if p.stem != "__init__"}
    out["specgate"] = ROOT / "specgate" / "__init__.py"
    for room, folder in ROOMS.items():
        for path in (ROOT / folder).glob("*.py"):
            name = f"specgate.{room}" if path.stem == "__init__" else f"specgate.{room}.{path.stem}"
            out[name] = path
    return out


MODULES = _modules()


def _imports(path: Path, top_level_only: bool = False) -> list[str]:
    names: list[str] = []
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            # `from specgate.runtime import metrics` names a module too.
            names += [f"{node.module}.{alias.name}" for alias in node.names if f"{node.module}.{alias.name}" in MODULES]
    return names


def _room(module: str) -> str:
    if module in ENTRY:
        return ENTRY[module]
    if module in LEAVES or module == "specgate":
        return "leaves"
    return module.split(".")[1]


def test_every_room_is_checked() -> None:
    assert {_room(m) for m in MODULES} == set(ALLOWED)
    assert len(MODULES) > 60


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_one_way(module: str) -> None:
    room = _room(module)
    wrong = []
    for name in _imports(MODULES[module], top_level_only=module in ENTRY):
        if name.split(".")[0] in {"gateway", "backends", "controllers", "dashboards", "runtime", "offline"}:
            wrong.append(f"{name} (outside the specgate namespace)")
        elif name.startswith("specgate.") and _room(name) not in ALLOWED[room] and _room(name) != room:
            wrong.append(name)
    assert not wrong, f"{module} ({room}) may not import {wrong}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _room(m) == "controllers"))
def test_controllers_do_no_io_and_read_no_config(module: str) -> None:
    top = {name.split(".")[0] for name in _imports(MODULES[module])}
    assert not top & (IO_PACKAGES | IO_STDLIB), f"{module} imports {top & (IO_PACKAGES | IO_STDLIB)}"
    assert "specgate.config" not in _imports(MODULES[module])


@pytest.mark.parametrize("module", sorted(LEAVES))
def test_leaves_import_nothing_of_specgate(module: str) -> None:
    assert not [n for n in _imports(MODULES[module]) if n.startswith("specgate")]


def test_no_import_cycles() -> None:
    graph = {m: {n for n in _imports(p) if n in MODULES and n != m} for m, p in MODULES.items()}
    # A package's __init__ is imported with each of its modules; none of ours imports anything.
    for m in MODULES:
        if MODULES[m].name == "__init__.py":
            assert not graph[m], f"{m} should stay empty of imports"
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, f"import cycles: {cycles}"


def test_the_server_loads_no_offline_tool() -> None:
    import subprocess

    code = (
        "import sys, specgate.gateway.app, specgate.gateway.cli;"
        "tools = ('specgate.offline', 'specgate.dashboards', 'matplotlib');"
        "bad = sorted(m for m in sys.modules if m.startswith(tools));"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT.parent)
