"""The release: the sdist and wheel `python -m build` makes, installed as a user installs them.

The wheel (built from the sdist) ships every module, the canvas script and the presets. In a
fresh virtualenv outside the source tree, with only what the wheel's metadata asks for (see
tests/release/wheel_env.py for how, without the network), `keras-seq[app]` builds a layer,
trains a preset with `keras-seq train`, exports it as a SavedModel that plain TensorFlow loads
and calls, runs one quick lab experiment, and serves the app, whose Build tab draws a new graph
in Chromium without a console error. The base install (no extra) imports `keras_seq` without
Gradio, pandas or Ray, and its `keras-seq` says in one line which extra a command needs.
"""

from __future__ import annotations

import re

import pytest

from tests.app.app_server import serving
from tests.app.browser import needs_chromium
from tests.app.test_app_canvas import edge, nodes, opened_page
from tests.builder_ui.lab.quick_experiment_one import check_the_report_of_quick_experiment_one
from tests.release.wheel_env import (
    CANVAS_SCRIPT,
    PRESETS_DIR,
    ROOT,
    Built,
    WheelVenv,
    build_distributions,
    check_isolated,
    expected_package_files,
    make_venv,
)

pytestmark = pytest.mark.large

# Hang guards, not expectations: the first test of each venv also builds it (seconds).
TIMEOUT_S = 900
# Not importable at all in the base install, let alone imported by `import keras_seq`.
APP_ONLY = ("gradio", "pandas", "plotly", "pydantic", "ray", "starlette")
# The smallest preset, shrunk to 96 training sequences of 5 steps and one epoch: a second.
TINY = ("--set", "task.lag=5", "--set", "task.n=120", "--set", "train.epochs=1")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    """The sdist and wheel, built once for the module outside the source tree."""
    outdir = tmp_path_factory.mktemp("dist")
    assert not outdir.resolve().is_relative_to(ROOT)
    return build_distributions(outdir)


@pytest.fixture(scope="module")
def app_venv(built, tmp_path_factory) -> WheelVenv:
    """A fresh venv with `keras-seq[app]`: the wheel and the closure of its app extra."""
    venv = make_venv(tmp_path_factory.mktemp("app-venv"), built, extras=("app",))
    check_isolated(venv)
    return venv


def preset(venv: WheelVenv, name: str):
    """A preset spec as the installed package ships it (not the source tree's copy)."""
    path = venv.site_packages() / PRESETS_DIR / f"{name}.yaml"
    assert path.is_file(), f"the installed package has no {path}"
    return path


def one_line_hint(result, extra: str) -> None:
    """A refused command: exit 2, one line on stderr saying which extra to install."""
    hint = f'pip install "keras-seq[{extra}]"'
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == 2, output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert hint in result.stderr, f"expected {hint!r} in {result.stderr!r}"


# --- The distributions ----------------------------------------------------------------------


@pytest.mark.timeout(TIMEOUT_S)
def test_the_wheel_ships_every_module_the_canvas_script_and_the_presets(built):
    shipped = {name for name in built.wheel_files() if ".dist-info/" not in name}
    expected = expected_package_files()
    assert CANVAS_SCRIPT in expected and sum(PRESETS_DIR in name for name in expected) >= 10
    assert not expected - shipped, f"missing from the wheel: {sorted(expected - shipped)}"
    assert not shipped - expected, f"unexpected in the wheel: {sorted(shipped - expected)}"
    # The wheel was built from the sdist; the sdist holds the same files, and the project.
    in_sdist = built.sdist_files()
    assert not expected - in_sdist, f"missing from the sdist: {sorted(expected - in_sdist)}"
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= in_sdist
    metadata = built.metadata()
    assert metadata["Name"] == "keras-seq"
    assert built.wheel.name.startswith(f"keras_seq-{metadata['Version']}-py3-none-any")
    assert re.search(r"^keras-seq = builder_ui\.cli:main$", built.entry_points(), re.M)


# --- keras-seq[app] in a fresh venv ---------------------------------------------------------

BUILD_A_LAYER = """
import importlib.util, json
import numpy as np
from keras_seq import layers
lstm = layers.CECLSTM(4)
print(json.dumps({
    "shape": list(lstm(np.zeros((2, 3, 5), "float32")).shape),
    "gradio": importlib.util.find_spec("gradio") is not None,
    "ray": importlib.util.find_spec("ray") is not None,
}))
"""

# Plain TensorFlow: the SavedModel is loaded and called without keras_seq.
CALL_THE_SAVED_MODEL = """
import json, sys
import numpy as np
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
serve = model.signatures["serving_default"]
(name, spec), = serve.structured_input_signature[1].items()
shape = [1 if size is None else size for size in spec.shape]
(output,) = serve(**{name: tf.zeros(shape, spec.dtype)}).values()
print(json.dumps({
    "shape": list(output.shape),
    "sums": output.numpy().sum(axis=-1).tolist(),
    "keras_seq": "keras_seq" in sys.modules,
}))
"""


@pytest.mark.timeout(TIMEOUT_S)
def test_the_installed_wheel_builds_a_layer_outside_the_source_tree(app_venv):
    # The app extra's Gradio is there; Ray, of the `ray` extra, is not.
    assert app_venv.python_json(BUILD_A_LAYER) == {"shape": [2, 4], "gradio": True, "ray": False}


@pytest.mark.timeout(TIMEOUT_S)
def test_keras_seq_trains_a_preset_and_exports_a_savedmodel_tensorflow_calls(app_venv):
    trained = app_venv.keras_seq("train", preset(app_venv, "vanilla_rnn"), "--runs", "runs", *TINY)
    found = re.search(r"^run (\S+) \(vanilla-rnn\): done$", trained.stdout, re.M | re.I)
    assert found, trained.stdout
    run_id = found[1]
    app_venv.keras_seq(
        "export", run_id, "--format", "savedmodel", "--runs", "runs", "--out", "exported"
    )
    assert (app_venv.work / "exported" / "saved_model.pb").is_file()
    called = app_venv.python_json(CALL_THE_SAVED_MODEL, "exported")
    assert called["shape"] == [1, 2] and not called["keras_seq"]
    assert called["sums"] == pytest.approx([1.0], abs=1e-5)  # the head's softmax


@pytest.mark.timeout(TIMEOUT_S)
def test_keras_seq_lab_runs_a_quick_experiment(app_venv):
    app_venv.keras_seq("lab", "--quick", "--only", "1", "--out", "lab-report", "--runs", "lab-runs")
    check_the_report_of_quick_experiment_one(
        app_venv.work / "lab-report", app_venv.work / "lab-runs"
    )


@needs_chromium
@pytest.mark.timeout(TIMEOUT_S)
def test_keras_seq_ui_draws_a_new_graph_on_the_build_tab_without_console_errors(app_venv, browser):
    from playwright.sync_api import expect

    directory = app_venv.work / "ui"
    directory.mkdir()
    program = [str(app_venv.bin / "keras-seq")]
    with (
        serving(directory, program=program, env=app_venv.env()) as server,
        opened_page(browser, server) as watched,
    ):
        page = watched.page
        page.locator("#new-graph").click()
        # Input → RNN → Output, the shapes reported by the server's Keras (in the venv).
        expect(nodes(page)).to_have_count(3)
        expect(edge(page, "encoder", "head")).to_contain_text("(None, 16)")
        assert watched.problems() == []
    assert "Traceback" not in server.log(), server.log()


@pytest.mark.timeout(TIMEOUT_S)
def test_an_option_whose_extra_is_missing_names_it_in_one_line(app_venv):
    """Ray is the `ray` extra's: `sweep --executor ray` in the app install says so."""
    spec = preset(app_venv, "recurrent_cells_sweep")
    result = app_venv.keras_seq("sweep", spec, "--executor", "ray", "--runs", "runs", check=False)
    one_line_hint(result, "ray")


# --- The base install (no extra) ------------------------------------------------------------

IMPORT_KERAS_SEQ = f"""
import importlib.util, json, sys
import keras_seq
print(json.dumps({{
    "imported": sorted(m for m in {APP_ONLY!r} if m in sys.modules),
    "installed": sorted(m for m in {APP_ONLY!r} if importlib.util.find_spec(m) is not None),
    "version": keras_seq.__version__,
}}))
"""


@pytest.mark.timeout(TIMEOUT_S)
def test_the_base_install_imports_keras_seq_alone_and_names_the_app_extra(built, tmp_path):
    metadata = built.metadata()
    assert "app" in (metadata.get_all("Provides-Extra") or []), "pyproject.toml has no app extra"
    venv = make_venv(tmp_path, built)
    check_isolated(venv)
    found = venv.python_json(IMPORT_KERAS_SEQ)
    assert found["installed"] == [], f"the base install has {found['installed']}"
    assert found["imported"] == []
    assert found["version"] == metadata["Version"]
    assert metadata["Version"] in venv.keras_seq("--version").stdout
    one_line_hint(venv.keras_seq("train", preset(venv, "vanilla_rnn"), *TINY, check=False), "app")
    one_line_hint(venv.keras_seq("ui", "--port", "1", check=False), "app")
