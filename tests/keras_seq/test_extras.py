"""keras_seq's base install: what it imports, what a missing optional package says, its version.

A package is made missing the way Python sees an absent one: `sys.modules[name] = None`
makes `import name` raise `ModuleNotFoundError` with `name` set, as when it is not installed.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import keras_seq
from keras_seq._extras import APP_MODULES, import_extra, missing_extra
from keras_seq.diagnostics import plot_alignment
from keras_seq.metrics import evaluate_by_length
from keras_seq.tasks import digits

ROOT = Path(__file__).resolve().parents[2]
HINT = 'pip install "keras-seq[app]"'


class Echo:
    """A translator that returns its input: enough to reach the scoring."""

    def translate(self, texts):
        return list(texts)


# --- The message --------------------------------------------------------------------------------


def test_the_message_is_one_line_naming_the_extra():
    assert missing_extra("The 'ray' executor needs Ray", "ray") == (
        "The 'ray' executor needs Ray: pip install \"keras-seq[ray]\""
    )


def test_evaluate_by_length_without_pandas_names_the_app_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ModuleNotFoundError) as raised:
        evaluate_by_length(Echo(), [("a b", "a b")])
    assert str(raised.value) == f"keras_seq.metrics.evaluate_by_length needs pandas: {HINT}"
    assert raised.value.name == "pandas"  # what a caller (the CLI) tells the packages apart by


def test_a_plot_without_matplotlib_names_the_app_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ModuleNotFoundError) as raised:
        plot_alignment(np.eye(2), ["a", "b"], ["c", "d"])
    assert str(raised.value) == f"keras_seq.diagnostics.plot_alignment needs matplotlib: {HINT}"


def test_digits_without_scikit_learn_names_the_app_extra(monkeypatch):
    # The submodule too: an earlier test in this process may have imported it, and a loaded
    # submodule is found without its parent.
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ModuleNotFoundError, match=re.escape(f"needs scikit-learn: {HINT}")):
        digits()


def test_a_module_missing_inside_an_installed_one_is_raised_as_python_says_it(
    tmp_path, monkeypatch
):
    # The package is there, a module it imports is not: not the extra's to explain.
    (tmp_path / "keras_seq_installed_here.py").write_text("import keras_seq_not_installed\n")
    monkeypatch.syspath_prepend(tmp_path)
    with pytest.raises(ModuleNotFoundError) as raised:
        import_extra("keras_seq_installed_here", "app", "a function")
    assert raised.value.name == "keras_seq_not_installed"
    assert "pip install" not in str(raised.value)


def test_the_app_modules_are_the_import_names_of_the_app_extra():
    """`APP_MODULES`, which the CLI tells a missing app package by, follows the app extra."""
    # The installed metadata: what pyproject.toml asks pip for, markers and all.
    requirements = [Requirement(line) for line in importlib.metadata.requires("keras-seq")]
    app = {
        canonicalize_name(requirement.name)
        for requirement in requirements
        if requirement.marker is not None
        and requirement.marker.evaluate({"extra": "app"})
        and not requirement.marker.evaluate({"extra": ""})
    }
    assert {"gradio", "pandas", "pydantic"} <= app
    # pydantic's own dependencies, which builder_ui imports by name too.
    with_pydantic = {"pydantic-core", "annotated-types"}
    pydantic_needs = {Requirement(line).name for line in importlib.metadata.requires("pydantic")}
    assert with_pydantic <= {canonicalize_name(name) for name in pydantic_needs}
    distributions = app | with_pydantic
    modules_of = defaultdict(set)
    for module, names in importlib.metadata.packages_distributions().items():
        for name in names:
            modules_of[canonicalize_name(name)].add(module)
    uncovered = sorted(name for name in distributions if not modules_of[name] & APP_MODULES)
    assert uncovered == [], f"no import name in APP_MODULES for {uncovered}"
    provided = set().union(*(modules_of[name] for name in distributions))
    assert APP_MODULES <= provided, f"not of the app extra: {sorted(APP_MODULES - provided)}"


# --- The version ----------------------------------------------------------------------------------


def test_the_version_is_written_once_and_read_without_importing_keras():
    # tomllib is Python 3.11's; on 3.10 the rest of this file still runs.
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert "version" not in project and "version" in project["dynamic"]
    attribute = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attribute == "keras_seq.__version__"
    # setuptools reads a literal assignment from the source without running it.
    tree = ast.parse((ROOT / "keras_seq" / "__init__.py").read_text(encoding="utf-8"))
    literals = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert literals == [keras_seq.__version__]
    # What pip installed (the editable install's metadata) says the same.
    assert importlib.metadata.version("keras-seq") == keras_seq.__version__


# --- A fresh interpreter --------------------------------------------------------------------------

# The builder's packages that keras_seq never imports. pandas is not among them: Keras itself
# imports pandas (and matplotlib, scikit-learn) when it is installed, so the base install's
# check is the next test's, which makes them missing.
NEVER_IMPORTED = ("gradio", "plotly", "pydantic", "ray", "starlette", "yaml")
IMPORTED = """
import json, sys
for name in sys.argv[1:]:
    sys.modules[name] = None  # not installed
import keras_seq
from keras_seq import layers
import numpy as np
shape = list(layers.CECLSTM(4)(np.zeros((2, 3, 5), "float32")).shape)
present = sorted({m.split(".")[0] for m, module in sys.modules.items() if module is not None})
print(json.dumps({"present": present, "shape": shape}))
"""


def run_import(*missing: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", IMPORTED, *missing],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.large  # a fresh interpreter
def test_import_keras_seq_imports_none_of_the_builders_packages():
    found = run_import()
    assert found["shape"] == [2, 4]
    assert sorted(set(NEVER_IMPORTED) & set(found["present"])) == []


@pytest.mark.large  # a fresh interpreter
def test_keras_seq_imports_and_builds_a_layer_without_the_app_extra():
    """The base install: every package of the app extra (and Ray, Optuna) missing."""
    missing = sorted(APP_MODULES | {"ray", "optuna"})
    found = run_import(*missing)
    assert found["shape"] == [2, 4]
    assert sorted(set(missing) & set(found["present"])) == []
