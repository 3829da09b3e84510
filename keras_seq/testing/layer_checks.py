"""The shared layer checks: serialization, export, precision, masking, XLA.

Usage, in a test:

    case = LayerCase(make=lambda **kw: layers.CECLSTM(8, **kw), features=3)
    check_layer(case, tmp_path)

Each check can also be run on its own (`check_config_round_trip(case)`, ...),
so that a test suite can report them separately.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np

# Constructor keywords every Keras layer accepts and may write into its config.
BASE_LAYER_KEYS = frozenset({"name", "trainable", "dtype"})

SUBPROCESS_TIMEOUT_S = 300


@dataclasses.dataclass(frozen=True)
class LayerCase:
    """A layer under test and how to feed it.

    Attributes:
        make: Builds a fresh, unbuilt layer; receives extra constructor
            keywords (`dtype="mixed_float16"`, ...) to forward.
        features: The feature size of each sequence step.
        sequence_lengths: Two time lengths the exported model must accept.
        batch_sizes: Batch sizes the exported model must accept.
        package: The package the layer is registered under.
        masking: Whether the layer consumes a `(batch, time)` mask.
        atol: Tolerance for outputs that should be equal up to float error.
        seed: Seed of the random inputs.
    """

    make: Callable[..., keras.layers.Layer]
    features: int
    sequence_lengths: tuple[int, int] = (5, 9)
    batch_sizes: tuple[int, int] = (1, 7)
    package: str = "keras_seq"
    masking: bool = True
    atol: float = 1e-5
    seed: int = 0

    def inputs(self, batch: int, time: int, offset: int = 0) -> np.ndarray:
        rng = np.random.default_rng(self.seed + 1000 * batch + time + offset)
        return rng.normal(size=(batch, time, self.features)).astype("float32")

    def model(self, layer: keras.layers.Layer | None = None) -> keras.Model:
        """A functional model around the layer, with a variable time axis."""
        layer = layer if layer is not None else self.make()
        inputs = keras.Input(shape=(None, self.features), name="sequence")
        return keras.Model(inputs, layer(inputs))


def _as_list(outputs) -> list[np.ndarray]:
    if isinstance(outputs, (list, tuple)):
        return [keras.ops.convert_to_numpy(o) for o in outputs]
    return [keras.ops.convert_to_numpy(outputs)]


def _assert_outputs_close(actual, expected, atol: float, what: str) -> None:
    actual, expected = _as_list(actual), _as_list(expected)
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a.shape == e.shape, f"{what}: output {index} has shape {a.shape}, expected {e.shape}"
        np.testing.assert_allclose(a, e, atol=atol, rtol=atol, err_msg=f"{what}: output {index}")


def _run_fresh_python(script: str, *, cwd: Path) -> str:
    """Runs `script` in a new interpreter, so nothing is shared with this process."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"fresh process failed ({result.returncode}):\n{result.stdout}\n{result.stderr[-4000:]}"
        )
    return result.stdout


def _constructor_parameters(cls: type) -> set[str]:
    return {
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self"
        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    }


def check_registration(case: LayerCase) -> None:
    """The layer's class is registered as `package>ClassName`."""
    layer = case.make()
    name = keras.saving.get_registered_name(type(layer))
    assert name == f"{case.package}>{type(layer).__name__}", (
        f"{type(layer).__name__} is registered as {name!r}; decorate it with "
        f"keras.saving.register_keras_serializable(package={case.package!r})"
    )


def check_config_round_trip(case: LayerCase) -> None:
    """`get_config` holds exactly the constructor arguments and rebuilds the layer."""
    layer = case.make()
    x = case.inputs(2, case.sequence_lengths[0])
    expected = layer(x)
    config = layer.get_config()
    json.dumps(config)  # a config must be plain JSON

    parameters = _constructor_parameters(type(layer))
    unknown = set(config) - parameters - BASE_LAYER_KEYS
    missing = parameters - set(config)
    assert not unknown, f"get_config() has keys that are not constructor arguments: {unknown}"
    assert not missing, f"get_config() lacks constructor arguments: {missing}"

    restored = type(layer).from_config(config)
    assert restored.get_config() == config, "from_config(get_config()) changed the config"
    restored(x)
    restored.set_weights(layer.get_weights())
    _assert_outputs_close(restored(x), expected, case.atol, "from_config")


def check_keras_file(case: LayerCase, directory: Path) -> None:
    """A model saved to `.keras` reloads with `safe_mode=True` in a fresh process."""
    model = case.model()
    x = case.inputs(3, case.sequence_lengths[1])
    path = directory / "model.keras"
    model.save(path)
    outputs = {f"arr_{index}": output for index, output in enumerate(_as_list(model(x)))}
    np.savez(directory / "keras_io.npz", x=x, **outputs)
    out = _run_fresh_python(
        f"""
        import numpy as np, keras
        import {case.package}  # registers the layers
        model = keras.saving.load_model({str(path)!r}, safe_mode=True)
        data = np.load({str(directory / "keras_io.npz")!r})
        outputs = model(data["x"])
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        for index, output in enumerate(outputs):
            np.testing.assert_allclose(
                keras.ops.convert_to_numpy(output), data[f"arr_{{index}}"],
                atol={case.atol}, rtol={case.atol})
        print("reloaded", len(outputs))
        """,
        cwd=directory,
    )
    assert "reloaded" in out


def check_saved_model(case: LayerCase, directory: Path) -> None:
    """`model.export` gives a SavedModel that TensorFlow alone loads and runs.

    The fresh process imports only NumPy and TensorFlow, and refuses any
    import of `case.package`, so the model cannot lean on the library that
    built it. (TensorFlow itself imports Keras for `tf.keras`; nothing here
    uses it.) It runs every combination of `case.batch_sizes` and
    `case.sequence_lengths`.
    """
    model = case.model()
    path = directory / "saved_model"
    model.export(str(path), format="tf_saved_model", verbose=False)
    arrays = {}
    for batch in case.batch_sizes:
        for time in case.sequence_lengths:
            x = case.inputs(batch, time, offset=7)
            arrays[f"x_{batch}_{time}"] = x
            for index, output in enumerate(_as_list(model(x))):
                arrays[f"y_{batch}_{time}_{index}"] = output
    np.savez(directory / "saved_io.npz", **arrays)
    out = _run_fresh_python(
        f"""
        import sys

        class RefuseKerasSeq:  # loading must not need the library that built the model
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == {case.package!r}:
                    raise ImportError(f"{{name}} may not be imported here")

        sys.meta_path.insert(0, RefuseKerasSeq())
        import numpy as np
        import tensorflow as tf
        loaded = tf.saved_model.load({str(path)!r})
        data = np.load({str(directory / "saved_io.npz")!r})
        checked = 0
        for key in [k for k in data.files if k.startswith("x_")]:
            outputs = loaded.serve(tf.constant(data[key]))
            outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            for index, output in enumerate(outputs):
                np.testing.assert_allclose(
                    output.numpy(), data["y" + key[1:] + f"_{{index}}"],
                    atol={case.atol}, rtol={case.atol})
                checked += 1
        assert not [m for m in sys.modules if m.split(".")[0] == {case.package!r}]
        print("served", checked)
        """,
        cwd=directory,
    )
    expected = len(case.batch_sizes) * len(case.sequence_lengths)
    assert f"served {expected * len(_as_list(model(case.inputs(1, 2))))}" in out, out


def check_mixed_precision(case: LayerCase) -> None:
    """Under `mixed_float16` the layer computes in float16 with float32 weights."""
    x = case.inputs(4, case.sequence_lengths[1])
    full = case.make()
    reference = full(x)
    half = case.make(dtype="mixed_float16")
    outputs = half(x)
    half.set_weights(full.get_weights())
    outputs = half(x)
    for output in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        assert keras.backend.standardize_dtype(output.dtype) == "float16", output.dtype
    for weight in half.weights:
        assert keras.backend.standardize_dtype(weight.dtype) == "float32", weight.path
    _assert_outputs_close(
        [keras.ops.cast(o, "float32") for o in _as_list(outputs)],
        reference,
        atol=2e-2,
        what="mixed_float16 against float32",
    )


def check_masking(case: LayerCase) -> None:
    """Masked steps do not influence the output, with right and left padding.

    Rows: full length, right-padded, left-padded, a single valid step, and a
    fully masked row, which must still give finite values. Only outputs at
    unmasked steps are compared (all of a row's output if it has no time axis).
    """
    if not case.masking:
        return
    time = case.sequence_lengths[1]
    steps = np.arange(time)
    mask = np.stack(
        [
            np.ones(time, bool),
            steps < time - 3,  # right-padded
            steps >= 4,  # left-padded
            steps == 0,
            np.zeros(time, bool),  # fully masked
        ]
    )
    layer = case.make()
    x = case.inputs(len(mask), time)
    noise = case.inputs(len(mask), time, offset=99) * 10.0
    x_changed = np.where(mask[..., None], x, noise)
    outputs = _as_list(layer(x, mask=mask))
    changed = _as_list(layer(x_changed, mask=mask))
    for output, other in zip(outputs, changed, strict=True):
        assert np.all(np.isfinite(output)), "masked input gave non-finite output"
        if output.ndim >= 3 and output.shape[1] == time:
            keep = np.broadcast_to(
                mask.reshape(mask.shape + (1,) * (output.ndim - 2)), output.shape
            )
            np.testing.assert_allclose(output[keep], other[keep], atol=case.atol, rtol=case.atol)
        else:
            np.testing.assert_allclose(output, other, atol=case.atol, rtol=case.atol)


def check_jit_fit_step(case: LayerCase) -> None:
    """One `fit` step with `jit_compile=True` runs, changes the weights, stays finite."""
    model = case.model()
    x = case.inputs(8, case.sequence_lengths[0])
    targets = [np.random.default_rng(1).normal(size=o.shape) for o in _as_list(model(x))]
    before = [np.copy(w) for w in model.get_weights()]
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse", jit_compile=True)
    history = model.fit(x, targets if len(targets) > 1 else targets[0], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
    changed = [not np.allclose(b, a) for b, a in zip(before, model.get_weights(), strict=True)]
    assert any(changed), "a fit step left every weight unchanged"


ALL_CHECKS: Sequence[str] = (
    "registration",
    "config_round_trip",
    "keras_file",
    "saved_model",
    "mixed_precision",
    "masking",
    "jit_fit_step",
)


def check_layer(case: LayerCase, directory: Path, checks: Sequence[str] = ALL_CHECKS) -> None:
    """Runs the named checks (all by default) on `case`, writing files under `directory`."""
    directory = Path(directory)
    for name in checks:
        function = globals()[f"check_{name}"]
        if "directory" in inspect.signature(function).parameters:
            sub = directory / name
            sub.mkdir(parents=True, exist_ok=True)
            function(case, sub)
        else:
            function(case)
