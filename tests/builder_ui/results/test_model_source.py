"""Python source for model architectures: graphs the builders do not make (shared layers,
several outputs, operations, Sequential), checked in a fresh interpreter, and refusals."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import keras
import pytest

from builder_ui.results.model_source import SourceError, model_source


def rebuilt_in_fresh_process(sources, directory):
    """Params, layer classes/configs and shapes of each script's model, built in one new process."""
    paths = []
    for index, source in enumerate(sources):
        paths.append(directory / f"model_{index}.py")
        paths[-1].write_text(source)
    code = textwrap.dedent(
        """
        import json, runpy, sys
        described = []
        for path in sys.argv[1:]:
            model = runpy.run_path(path)["build_model"]()
            described.append({
                "params": model.count_params(),
                "layers": [[type(l).__name__, l.get_config()] for l in model.layers],
                "inputs": [list(t.shape) for t in model.inputs],
                "outputs": [list(t.shape) for t in model.outputs],
            })
        print(json.dumps(described, default=repr))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def described(model):
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "build_config"}
        if isinstance(value, (list, tuple)):
            return [strip(v) for v in value]
        return value

    return json.loads(
        json.dumps(
            {
                "params": model.count_params(),
                "layers": [
                    [type(layer).__name__, strip(layer.get_config())] for layer in model.layers
                ],
                "inputs": [list(t.shape) for t in model.inputs],
                "outputs": [list(t.shape) for t in model.outputs],
            },
            default=repr,
        )
    )


def two_heads():
    """Two inputs through one shared layer, an operation, a layer with three outputs."""
    a = keras.Input((4, 3), name="a")
    b = keras.Input((4, 3), name="b")
    shared = keras.layers.Dense(5, activation="tanh", name="shared")
    total = keras.ops.add(shared(a), shared(b))  # an operation, not a layer
    sequence, h, _ = keras.layers.LSTM(6, return_sequences=True, return_state=True, name="lstm")(
        total
    )
    head = keras.layers.Dense(2, kernel_initializer="he_normal", name="head")(h)
    return keras.Model({"a": a, "b": b}, [head, sequence], name="two_heads")


def small_sequential():
    return keras.Sequential(
        [
            keras.Input((7,)),
            keras.layers.Dense(3, activation="relu", name="hidden"),
            keras.layers.Dropout(0.25, name="drop"),
            keras.layers.Dense(1, use_bias=False, name="out"),
        ],
        name="small",
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Both models, their scripts, and what the scripts build in a fresh interpreter."""
    models = [two_heads(), small_sequential()]
    sources = [model_source(model) for model in models]
    rebuilt = rebuilt_in_fresh_process(sources, tmp_path_factory.mktemp("scripts"))
    return list(zip(models, sources, rebuilt, strict=True))


@pytest.mark.large
def test_shared_layers_several_outputs_and_operations_are_rebuilt(written):
    model, source, rebuilt = written[0]
    assert 'shared_layer = keras.layers.Dense(5, activation="tanh", name="shared")' in source
    assert "shared_0 = shared_layer(a)" in source and "shared_1 = shared_layer(b)" in source
    assert "keras.ops.add(shared_0, shared_1)" in source
    assert "lstm[1]" in source and "[head, lstm[0]]" in source  # outputs of the LSTM by index
    assert rebuilt == described(model)


@pytest.mark.large
def test_sequential_models_are_rebuilt(written):
    model, source, rebuilt = written[1]
    assert "keras.Sequential(" in source
    assert 'keras.layers.Dropout(0.25, name="drop")' in source
    assert 'keras.layers.Dense(1, use_bias=False, name="out")' in source
    assert rebuilt == described(model)


def test_a_layer_class_that_cannot_be_imported_is_refused():
    class Doubler(keras.layers.Layer):
        def call(self, x):
            return 2 * x

    inputs = keras.Input((3,), name="x")
    model = keras.Model(inputs, Doubler(name="doubler")(inputs))
    with pytest.raises(SourceError, match="Doubler cannot be imported by name"):
        model_source(model)
