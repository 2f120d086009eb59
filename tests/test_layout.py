"""The project's layout: layers that import only downward, and no import circle anywhere.

Layers, each importing only those below it: `rlvr_envs.core` (and the registry, which names
everything else by string, gymnasium's convention) < the domains `text_game`, `web`,
`video` (never each other) < `simulators` < `planning`, `policy_eval` (never each other) <
`integrations` < `cli`; outside the package `baselines` < `trainers` < `benchmarks`.
Imports at any depth of a file count (a function-level import is still a dependency).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("rlvr_envs", "baselines", "trainers", "benchmarks")
DOMAINS = ("text_game", "web", "video")
#: second-level name inside rlvr_envs -> layer (equal numbers are peers that must not import each other)
PACKAGE_LAYERS = {"core": 0, "registration": 0, "text_game": 1, "web": 1, "video": 1, "simulators": 2,
                  "planning": 3, "policy_eval": 3, "integrations": 4, "cli": 5}
OUTSIDE_LAYERS = {"baselines": 6, "trainers": 7, "benchmarks": 8}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for top in TOP_LEVEL for p in (ROOT / top).rglob("*.py")}


def imports_of(path: Path) -> set[str]:
    """Every name `path` imports (at any depth), and modules it loads by a literal name
    (`importlib.import_module("x")`, `import_string("x:Y")`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if called in ("import_module", "import_string") and isinstance(node.args[0].value, str):
                found.add(node.args[0].value.split(":")[0])
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {t for t in imports_of(path) if t in known and t != name} for name, path in known.items()}


def area(module: str) -> str:
    """`rlvr_envs.video.task` -> "video"; `trainers.grpo` -> "trainers"; the package itself -> "core"."""
    parts = module.split(".")
    if parts[0] != "rlvr_envs":
        return parts[0]
    return parts[1] if len(parts) > 1 else "core"


def layer(module: str) -> int:
    name = area(module)
    return OUTSIDE_LAYERS[name] if name in OUTSIDE_LAYERS else PACKAGE_LAYERS[name]


def test_every_area_has_a_layer():
    unknown = sorted({area(m) for m in modules()} - set(PACKAGE_LAYERS) - set(OUTSIDE_LAYERS))
    assert not unknown, f"give these a layer in tests/test_layout.py: {unknown}"


def test_no_import_runs_up_a_layer():
    upward = [f"{a} -> {b}" for a, targets in graph().items() for b in sorted(targets) if layer(b) > layer(a)]
    assert not upward, upward


def test_peers_do_not_import_each_other():
    crossings = [f"{a} -> {b}" for a, targets in graph().items() for b in sorted(targets)
                 if layer(a) == layer(b) and area(a) != area(b) and layer(a) > 0]
    assert not crossings, crossings


def test_core_imports_no_domain():
    leaks = [(a, b) for a, targets in graph().items() for b in targets if area(a) == "core" and layer(b) > 0]
    assert not leaks, leaks


def test_modules_the_cli_imports_by_name_sit_below_it():
    from rlvr_envs import cli

    named = [module for module, _ in [*cli.DATA_COMMANDS.values(), *cli.APPLICATION_COMMANDS.values()]]
    assert named and all(layer(m) < layer("rlvr_envs.cli") for m in named), named


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path + [node, nxt]
            if nxt not in state and (found := visit(nxt, path + [node])):
                return found
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node, [])):
            return found
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("scope", ["rlvr_envs", "the whole tree"])
def test_import_graph_has_no_cycle(scope):
    edges = graph()
    if scope == "rlvr_envs":
        edges = {a: t for a, t in edges.items() if a.startswith("rlvr_envs")}
    # a package's __init__ importing its own submodules is not a cycle of concern
    edges = {a: {b for b in targets if not b.startswith(a + ".")} for a, targets in edges.items()}
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle)


def test_every_domain_folder_exists_beside_core():
    package = ROOT / "rlvr_envs"
    assert {p.name for p in package.iterdir() if (p / "__init__.py").exists()} >= {"core", *DOMAINS}


def test_no_reference_to_documents_outside_the_project():
    """Docstrings once cited a design file that only the authors had; a reader cannot follow that."""
    cited = [f"{path.relative_to(ROOT)}" for path in [*modules().values(), *(ROOT / "tests").glob("*.py")]
             if re.search(r"DESIGN(\.md)? §", path.read_text(encoding="utf-8"))]
    assert not cited, cited
