"""The package layout: a domain-free core, one folder per domain, no import cycle, and no
import from one domain into another (DESIGN.md §2)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rlvr_envs"
DOMAINS = ("text_game", "web", "video")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every rlvr_envs module `path` imports (at any depth of the file, lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("rlvr_envs")}


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = {}
    for name, path in modules.items():
        edges[name] = {target for target in imports_of(path) if target in modules and target != name}
    return edges


def area(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "package"


def test_no_import_crosses_from_one_domain_into_another():
    crossings = [(a, b) for a, targets in graph().items() for b in targets
                 if area(a) in DOMAINS and area(b) in DOMAINS and area(a) != area(b)]
    assert not crossings, crossings


def test_core_imports_no_domain():
    leaks = [(a, b) for a, targets in graph().items() for b in targets if area(a) == "core" and area(b) != "core"]
    assert not leaks, leaks


def test_module_import_graph_has_no_cycle():
    edges = graph()
    # a package's __init__ importing its own submodules is not a cycle of concern
    edges = {a: {b for b in targets if not b.startswith(a + ".")} for a, targets in edges.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError(" -> ".join(path + [node, nxt]))
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


def test_every_domain_folder_exists_beside_core():
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} >= {"core", *DOMAINS}
