"""builder_ui's layers import only downwards, with no circle, and hide no imports in functions.

    specs ─▶ builders ─▶ engine ─▶ results, lab ─▶ app ─▶ cli

keras_seq's modules import each other with no circle either.

The imports are read from the source with `ast` (every `import` statement,
at module level or inside a function), not by importing, so a new upward or
circular import fails here whatever the code does at run time.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "builder_ui"

# Rank of each layer: a module may import its own layer and the layers of lower rank.
# `results` and `lab` share a rank but are separate layers: neither imports the other.
# `files` (writes through a temporary name and a rename) and `extras` (what a missing optional
# package says) are under all of them.
LAYERS = {
    "files": -1,
    "extras": -1,
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
    # importlib.metadata (email, zipfile, csv: 20 ms): `keras-seq --version` reads it, not --help.
    "importlib",
}
# The modules that import builder_ui inside functions: the command line's (`keras-seq`, one
# module per command), so that `--help` and each command load only what that command needs.
LAZY_BUILDER_UI = {"builder_ui.cli"}
# Keras is imported at the top of a few modules of builder_ui (the Keras boundary, drawn
# between modules): any module may import one of them inside a function, with its reason,
# so that importing the importer stays cheap.
HEAVY_TOP = {"keras", "tensorflow", "keras_seq"}  # keras_seq loads Keras


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package: Path) -> dict[str, Path]:
    """Every module of a package, by its dotted name."""
    return {module_name(path): path for path in sorted(package.rglob("*.py"))}


MODULES = package_modules(PACKAGE)
KERAS_SEQ_MODULES = package_modules(ROOT / "keras_seq")


def is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules.get(name, Path()).name == "__init__.py"


def imported_modules(node: ast.AST, importer: str, modules: dict[str, Path]) -> list[str]:
    """The modules of the importer's package that an import statement loads.

    `modules` is that package's modules (`MODULES` for builder_ui); a module
    `y` imported by `from x import y` counts as `x.y`.
    """
    package = importer.split(".")[0]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == package]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = importer.split(".")
        if not is_package(importer, modules):
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, node.module] if node.module else base)
    else:
        module = node.module or ""
    if module.split(".")[0] != package:
        return []
    found = []
    for alias in node.names:
        child = f"{module}.{alias.name}"
        found.append(child if child in modules else module)
    return found


def imports_of(
    name: str, modules: dict[str, Path] = MODULES
) -> list[tuple[ast.AST, str | None, bool]]:
    """Each import in a module: (statement, imported module of its package or None, in a def)."""
    tree = ast.parse(modules[name].read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            local = node.col_offset > 0
            targets = imported_modules(node, name, modules)
            found.extend((node, target, local) for target in targets)
            if not targets:
                found.append((node, None, local))
    return found


def keras_modules(modules: dict[str, Path] = MODULES) -> set[str]:
    """The modules of builder_ui that import Keras (or TensorFlow) at their top."""
    found = set()
    for name in modules:
        for node, target, local in imports_of(name, modules):
            if local or target is not None:
                continue
            module = (node.module if isinstance(node, ast.ImportFrom) else node.names[0].name) or ""
            if module.split(".")[0] in HEAVY_TOP:
                found.add(name)
    return found


def layer_of(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) == 1:
        return None  # builder_ui/__init__.py
    return parts[1]


def graph(modules: dict[str, Path] = MODULES) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name in modules:
        for _, target, _ in imports_of(name, modules):
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


def circle_through(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """One circle of imports inside a component `find_cycles` found: `[a, b, …, a]`.

    The shortest way from the component's first module back to itself (a
    breadth-first search that stays inside the component).
    """
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in sorted(edges[node] & members):
            if other == start:
                return [*paths[node], start]
            if other not in paths:
                paths[other] = [*paths[node], other]
                queue.append(other)
    raise AssertionError(f"no circle through {start} in {component}")


def describe_circles(modules: dict[str, Path]) -> list[str]:
    """Each import circle among `modules`, one line: the modules and where each imports the next."""
    edges = graph(modules)
    lines = []
    for component in find_cycles(edges):
        circle = circle_through(edges, component)
        where = []
        for importer, imported in itertools.pairwise(circle):
            statements = imports_of(importer, modules)
            line = min(node.lineno for node, target, _ in statements if target == imported)
            where.append(f"{modules[importer].relative_to(ROOT)}:{line}")
        lines.append(" -> ".join(circle) + f"  (imported at {', '.join(where)})")
    return lines


def test_no_import_circle():
    circles = describe_circles(MODULES)
    assert not circles, "import circles in builder_ui:\n" + "\n".join(circles)


def test_keras_seq_has_no_import_circle():
    """No keras_seq module imports, even inside a function, one that imports it back."""
    circles = describe_circles(KERAS_SEQ_MODULES)
    assert not circles, "import circles in keras_seq:\n" + "\n".join(circles)


def test_the_cycle_finder_finds_a_circle():
    # The checks above can fail: a two-module circle and a longer one are both found.
    edges = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert find_cycles(edges) == [["a", "b"], ["c", "d", "e"]]
    assert [circle_through(edges, c) for c in find_cycles(edges)] == [
        ["a", "b", "a"],
        ["c", "d", "e", "c"],
    ]


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
    heavy = keras_modules()
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").split("\n")
        for node, target, local in imports_of(name):
            if not local:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if target is not None:
                lazy = any(name == m or name.startswith(f"{m}.") for m in LAZY_BUILDER_UI)
                if not lazy and target not in heavy:
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
