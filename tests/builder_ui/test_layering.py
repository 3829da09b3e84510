"""builder_ui's layers import only downwards, with no circle, and hide no imports in functions.

    specs ─▶ builders ─▶ engine ─▶ results, lab ─▶ app ─▶ cli

The imports are read from the source with `ast` (every `import` statement,
at module level or inside a function), not by importing, so a new upward or
circular import fails here whatever the code does at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builder_ui"

# Rank of each layer: a module may import its own layer and the layers of lower rank.
# `results` and `lab` share a rank but are separate layers: neither imports the other.
# `files` (writes through a temporary name and a rename) is under all of them.
LAYERS = {
    "files": -1,
    "specs": 0,
    "builders": 1,
    "engine": 2,
    "results": 3,
    "lab": 3,
    "app": 4,
    "cli": 5,
}
# Heavy or optional libraries a function may import on first use, with a reason.
LAZY_ALLOWED = {
    "keras",
    "keras_seq",
    "tensorflow",
    "jax",
    "torch",
    "pandas",
    "matplotlib",
    "ray",
    # pyarrow comes with the ray extra: the storage URI remote trials send files through.
    "pyarrow",
    "tensorboard",
    # scipy.stats loads most of SciPy; only the lab's measurements use it.
    "scipy",
    "gradio",
    # The optional `export` extra (ONNX and LiteRT files): imported when an export needs it.
    "onnx",
    "tf2onnx",
}
# The modules that import builder_ui inside functions: the command line (`keras-seq` and its
# `lab` command), so that `--help` and each command load only what that command needs.
LAZY_BUILDER_UI = {"builder_ui.cli", "builder_ui.lab.cli"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def imported_modules(node: ast.AST, importer: str) -> list[str]:
    """The builder_ui modules an import statement loads (a `from x import y` module y counts)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "builder_ui"]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = importer.split(".")
        if not is_package(importer):
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    if module.split(".")[0] != "builder_ui":
        return []
    found = []
    for alias in node.names:
        child = f"{module}.{alias.name}"
        found.append(child if child in MODULES else module)
    return found


def imports_of(name: str) -> list[tuple[ast.AST, str, bool]]:
    """Each import in a module: (statement, imported builder_ui module or None, inside a def)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            local = node.col_offset > 0
            targets = imported_modules(node, name)
            found.extend((node, target, local) for target in targets)
            if not targets:
                found.append((node, None, local))
    return found


def layer_of(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) == 1:
        return None  # builder_ui/__init__.py
    return parts[1]


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name in MODULES:
        for _, target, _ in imports_of(name):
            if target is not None and target != name:
                edges[name].add(target)
    return edges


def test_every_module_is_in_a_layer():
    strays = [name for name in MODULES if name != "builder_ui" and layer_of(name) not in LAYERS]
    assert not strays, f"modules outside the layers {sorted(LAYERS)}: {strays}"


def test_no_import_goes_up_or_sideways_between_layers():
    wrong = []
    for name, targets in graph().items():
        here = layer_of(name)
        if here is None:
            continue
        for target in targets:
            there = layer_of(target)
            if there is None:
                wrong.append(f"{name} -> {target} (the top package)")
            elif there != here and LAYERS[there] >= LAYERS[here]:
                wrong.append(f"{name} ({here}) -> {target} ({there})")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_circle():
    assert find_cycles(graph()) == []


def test_the_cycle_finder_finds_a_circle():
    # The check above can fail: a two-module circle and a longer one are both found.
    edges = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert find_cycles(edges) == [["a", "b"], ["c", "d", "e"]]


def _block_has_reason(lines: list[str], node: ast.AST) -> bool:
    """A comment on the import's line, or above the run of imports it starts or belongs to."""
    row = node.lineno - 1
    if "#" in lines[row]:
        return True
    while row > 0:
        above = lines[row - 1].strip()
        if above.startswith("#"):
            return True
        in_run = (
            not above or above.startswith(("import ", "from ")) or above.endswith(("(", ",", ")"))
        )
        if not in_run:
            return False
        row -= 1
    return False


def test_function_local_imports_are_heavy_libraries_with_a_reason():
    wrong = []
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").split("\n")
        for node, target, local in imports_of(name):
            if not local:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if target is not None:
                if name not in LAZY_BUILDER_UI:
                    wrong.append(f"{where}: builder_ui import {target} inside a function")
                elif not _block_has_reason(lines, node):
                    wrong.append(f"{where}: {target} imported inside a function without a reason")
                continue
            module = (node.module if isinstance(node, ast.ImportFrom) else node.names[0].name) or ""
            if module.split(".")[0] not in LAZY_ALLOWED:
                wrong.append(f"{where}: {module} imported inside a function (import it on top)")
            elif not _block_has_reason(lines, node):
                wrong.append(f"{where}: {module} imported inside a function without a reason")
    assert not wrong, "\n".join(wrong)


@pytest.mark.large
def test_tabs_do_not_import_each_other():
    tabs = [name for name in MODULES if name.startswith("builder_ui.app.tabs.")]
    wrong = [
        f"{name} -> {target}"
        for name in tabs
        for target in graph()[name]
        if target.startswith("builder_ui.app.tabs")
    ]
    assert not wrong, "tabs get each other's components from the page:\n" + "\n".join(wrong)


@pytest.mark.parametrize("package", ["builder_ui.app.actions", "builder_ui.app.context"])
def test_the_app_actions_import_no_gradio(package):
    names = [name for name in MODULES if name == package or name.startswith(package + ".")]
    for name in names:
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] != "gradio" for a in node.names), name
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "gradio", name
