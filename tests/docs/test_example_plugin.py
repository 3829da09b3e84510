"""The example plugin in examples/plugin installs with pip and trains from its spec.

pip installs the package (without dependencies: keras_seq is the checkout under test) into a
temporary folder, which the commands get on PYTHONPATH: what pip leaves there, the package
and its `.dist-info` with `entry_points.txt`, is what importlib.metadata finds, as in a
site-packages. Nothing is installed into the project's environment. The package is copied
first, so the build's files (build/, *.egg-info) never land in the checkout.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from builder_ui.engine import RunStore
from tests.docs.snippets import ROOT

PLUGIN = ROOT / "examples" / "plugin"
TIMEOUT_S = 600  # a hang guard: install and training take well under a minute on 2 cores


def _run(argv, cwd, env):
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The plugin pip-installed into a folder; returns (folder, environment for commands)."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "source"
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    site = work / "site"
    argv = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site)]
    if importlib.util.find_spec("setuptools") is not None:
        argv.append("--no-build-isolation")  # build with this environment's setuptools: offline
    result = _run([*argv, "--quiet", str(source)], work, os.environ.copy())
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow"),
    }
    return work, env


@pytest.mark.large
def test_pip_leaves_the_entry_points_that_builder_ui_reads(installed):
    work, _ = installed
    (entry_points,) = (work / "site").glob("kseq_example_plugin-*.dist-info/entry_points.txt")
    text = entry_points.read_text()
    assert "[keras_seq.builders]" in text
    assert "sine_frequency = kseq_example_plugin.builders:SineFrequency" in text
    assert "conv_classifier = kseq_example_plugin.builders:ConvClassifier" in text


@pytest.mark.large
def test_the_installed_plugin_trains_from_its_spec_with_keras_seq_train(installed):
    work, env = installed
    runs = work / "runs"
    argv = [sys.executable, "-m", "builder_ui.cli", "train", str(PLUGIN / "spec.yaml")]
    result = _run([*argv, "--runs", str(runs)], work, env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    with RunStore(runs) as store:
        (record,) = store.list_runs()
        assert record.status == "done"
        assert record.spec["task"]["type"] == "sine_frequency"
        assert record.spec["model"]["type"] == "conv_classifier"
        epochs = yaml.safe_load((PLUGIN / "spec.yaml").read_text())["train"]["epochs"]
        assert len(store.history(record.id)) == epochs
        assert 0.0 <= record.metrics["accuracy"] <= 1.0, record.metrics


@pytest.mark.large
def test_a_bad_plugin_field_is_refused_by_name_and_writes_nothing(installed):
    work, env = installed
    runs = work / "refused-runs"
    argv = [sys.executable, "-m", "builder_ui.cli", "train", str(PLUGIN / "spec.yaml")]
    argv += ["--runs", str(runs), "--set", "model.kernel_size=0"]
    result = _run(argv, work, env)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-4000:]
    assert "model.kernel_size" in result.stderr
    assert not runs.exists()


@pytest.mark.large
def test_the_plugin_types_are_in_the_schema(installed):
    work, env = installed
    result = _run([sys.executable, "-m", "builder_ui.cli", "schema"], work, env)
    assert result.returncode == 0, result.stderr[-4000:]
    assert '"conv_classifier"' in result.stdout
    assert '"sine_frequency"' in result.stdout
