"""The shared layer checks: serialization, export, precision, masking, XLA.

Usage, in a test, for a layer with one sequence input:

    case = LayerCase(make=lambda **kw: layers.CECLSTM(8, **kw), features=3)
    check_layer(case, tmp_path)

and for a layer with several named inputs, each with its own shape and time
lengths (here attention: a query sequence and a value sequence):

    case = LayerCase(
        make=lambda **kw: layers.BahdanauAttention(8, **kw),
        named_inputs=(
            LayerInput("query", features=5, sequence_lengths=(3, 6)),
            LayerInput("value", features=4),
        ),
        call_kwargs={"return_attention_scores": True},
    )

Inputs are passed to the layer positionally, in the order given; their masks
as `mask=` for a single input and as `<name>_mask=` keywords otherwise (the
convention of `keras.layers.MultiHeadAttention`). The model around the layer
has one `keras.Input` per named input, so its exported `serve` takes a dict.

Each check can also be run on its own (`check_config_round_trip(case)`, ...),
so that a test suite can report them separately.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import keras
import numpy as np

# Constructor keywords every Keras layer accepts and may write into its config.
BASE_LAYER_KEYS = frozenset({"name", "trainable", "dtype"})

SUBPROCESS_TIMEOUT_S = 300

# Model outputs are computed with `predict_on_batch`, one compiled function per
# shape: JAX would otherwise compile every op of an eager call anew for each
# new input shape, several times slower for the few calls made here.


@dataclasses.dataclass(frozen=True)
class LayerInput:
    """One named input of a layer under test.

    Attributes:
        name: The name of the model's `keras.Input`; its mask is passed to
            the layer as `<name>_mask=`.
        features: The shape of one step: an integer, or a tuple such as
            `(heads, head_dim)`.
        sequence_lengths: Its two time lengths (the first is used by the
            config, fit and export checks, the second by the others; the
            export check runs both). Defaults to the case's.
        time_axis: False for an input without a time axis, such as one
            decoder step `(batch, features)`.
        masked: Whether the masking check masks this input's steps.
    """

    name: str
    features: int | tuple[int, ...]
    sequence_lengths: tuple[int, int] | None = None
    time_axis: bool = True
    masked: bool = True

    @property
    def step_shape(self) -> tuple[int, ...]:
        return (self.features,) if isinstance(self.features, int) else tuple(self.features)


@dataclasses.dataclass(frozen=True)
class LayerCase:
    """A layer under test and how to feed it.

    Attributes:
        make: Builds a fresh, unbuilt layer; receives extra constructor
            keywords (`dtype="mixed_float16"`, ...) to forward.
        features: The feature size of each step of the layer's one sequence
            input (named `"sequence"`). Give this or `named_inputs`.
        sequence_lengths: Two time lengths the exported model must accept.
        batch_sizes: Batch sizes the exported model must accept.
        package: The package the layer is registered under.
        masking: Whether the layer consumes masks.
        atol: Tolerance for outputs that should be equal up to float error.
        seed: Seed of the random inputs.
        named_inputs: The layer's inputs, for a layer with several (see
            `LayerInput`), in the order the layer takes them.
        call_kwargs: Extra keyword arguments for every call of the layer,
            e.g. `{"return_attention_scores": True}`.
        output_time_axes: For each output, the axis that runs along the
            first input's time steps (outputs at that input's masked steps are
            not compared by the masking check), or None for none. Default:
            axis 1 of an output of rank 3 or more whose axis 1 has the first
            input's length.
    """

    make: Callable[..., keras.layers.Layer]
    features: int | None = None
    sequence_lengths: tuple[int, int] = (5, 9)
    batch_sizes: tuple[int, int] = (1, 7)
    package: str = "keras_seq"
    masking: bool = True
    atol: float = 1e-5
    seed: int = 0
    named_inputs: tuple[LayerInput, ...] = ()
    call_kwargs: Mapping[str, object] = dataclasses.field(default_factory=dict)
    output_time_axes: tuple[int | None, ...] | None = None

    def __post_init__(self):
        if (self.features is None) == (not self.named_inputs):
            raise ValueError("LayerCase needs exactly one of `features` and `named_inputs`.")

    @property
    def input_specs(self) -> tuple[LayerInput, ...]:
        """The named inputs; a one-input case has one, named `"sequence"`."""
        if self.named_inputs:
            return tuple(self.named_inputs)
        return (LayerInput("sequence", self.features),)

    def lengths(self, spec: LayerInput) -> tuple[int, int]:
        return spec.sequence_lengths or self.sequence_lengths

    def sample(self, batch: int, which: int, offset: int = 0) -> dict[str, np.ndarray]:
        """Random inputs by name: `batch` rows, each input at its `which`-th length."""
        arrays = {}
        for index, spec in enumerate(self.input_specs):
            time = self.lengths(spec)[which]
            rng = np.random.default_rng(self.seed + 1000 * batch + time + offset + 10**5 * index)
            shape = (batch, time, *spec.step_shape) if spec.time_axis else (batch, *spec.step_shape)
            arrays[spec.name] = rng.normal(size=shape).astype("float32")
        return arrays

    def inputs(self, batch: int, time: int, offset: int = 0) -> np.ndarray:
        """Random `(batch, time, features)` input of a one-input case."""
        if self.named_inputs:
            raise TypeError("This case has named inputs: use `case.sample(batch, which)`.")
        rng = np.random.default_rng(self.seed + 1000 * batch + time + offset)
        return rng.normal(size=(batch, time, self.features)).astype("float32")

    def call(self, layer, inputs: Mapping[str, object], masks: Mapping[str, object] | None = None):
        """Calls `layer` on `inputs` (by name) with `masks` (by input name) and `call_kwargs`."""
        specs = self.input_specs
        kwargs = dict(self.call_kwargs)
        for name, mask in (masks or {}).items():
            kwargs["mask" if len(specs) == 1 else f"{name}_mask"] = mask
        return layer(*(inputs[spec.name] for spec in specs), **kwargs)

    def model_inputs(self, inputs: Mapping[str, object]):
        """What `case.model()` takes: the one array, or the dict of named inputs."""
        return dict(inputs) if self.named_inputs else inputs[self.input_specs[0].name]

    def model(self, layer: keras.layers.Layer | None = None) -> keras.Model:
        """A functional model around the layer, with variable time axes."""
        layer = layer if layer is not None else self.make()
        inputs = {
            spec.name: keras.Input(
                shape=((None,) if spec.time_axis else ()) + spec.step_shape, name=spec.name
            )
            for spec in self.input_specs
        }
        return keras.Model(self.model_inputs(inputs), self.call(layer, inputs))


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


def _assert_close_in_norm(actual, expected, relative: float, atol: float, what: str) -> None:
    """`||a - e|| <= relative * ||e||` for each output, and every element within `atol`."""
    actual, expected = _as_list(actual), _as_list(expected)
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a.shape == e.shape, f"{what}: output {index} has shape {a.shape}, expected {e.shape}"
        error = float(np.linalg.norm(a - e))
        scale = float(np.linalg.norm(e))
        assert error <= relative * scale, (
            f"{what}: output {index} is off by {error:.3g} in norm, more than "
            f"{relative:g} of its norm {scale:.3g}"
        )
        np.testing.assert_allclose(a, e, atol=atol, rtol=0, err_msg=f"{what}: output {index}")


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
    x = case.sample(2, 0)
    expected = case.call(layer, x)
    config = layer.get_config()
    json.dumps(config)  # a config must be plain JSON

    parameters = _constructor_parameters(type(layer))
    unknown = set(config) - parameters - BASE_LAYER_KEYS
    missing = parameters - set(config)
    assert not unknown, f"get_config() has keys that are not constructor arguments: {unknown}"
    assert not missing, f"get_config() lacks constructor arguments: {missing}"

    restored = type(layer).from_config(config)
    assert restored.get_config() == config, "from_config(get_config()) changed the config"
    case.call(restored, x)
    restored.set_weights(layer.get_weights())
    _assert_outputs_close(case.call(restored, x), expected, case.atol, "from_config")


# In the fresh processes: rebuild the model's input (the one array, or the
# dict of named inputs) from arrays saved as `in__<run>__<name>`.
_READ_INPUTS = """
def read_inputs(data, run, convert):
    prefix = "in__" + run + "__"
    inputs = {{k[len(prefix):]: convert(data[k]) for k in data.files if k.startswith(prefix)}}
    return inputs if {multi} else next(iter(inputs.values()))
"""


def _save_run(arrays: dict, run: str, inputs: Mapping[str, np.ndarray], outputs) -> None:
    for name, value in inputs.items():
        arrays[f"in__{run}__{name}"] = value
    for index, output in enumerate(_as_list(outputs)):
        arrays[f"out__{run}__{index}"] = output


def _keras_file_script(case: LayerCase, directory: Path) -> tuple[str, str]:
    """Saves the model to `.keras`; returns the script that reloads it and its success line."""
    model = case.model()
    x = case.sample(3, 1)
    path = directory / "model.keras"
    model.save(path)
    arrays = {}
    _save_run(arrays, "0", x, model.predict_on_batch(case.model_inputs(x)))
    np.savez(directory / "keras_io.npz", **arrays)
    read_inputs = _READ_INPUTS.format(multi=bool(case.named_inputs))
    script = f"""
import numpy as np, keras
import {case.package}  # registers the layers
{read_inputs}
model = keras.saving.load_model({str(path)!r}, safe_mode=True)
data = np.load({str(directory / "keras_io.npz")!r})
outputs = model.predict_on_batch(read_inputs(data, "0", np.asarray))
outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
for index, output in enumerate(outputs):
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(output), data[f"out__0__{{index}}"],
        atol={case.atol}, rtol={case.atol})
print("reloaded", len(outputs))
"""
    return script, "reloaded"


def saved_model_export_available() -> bool:
    """Whether `model.export(format="tf_saved_model")` can run on the current backend.

    TensorFlow writes SavedModels itself and JAX goes through `jax2tf`. On
    PyTorch, Keras converts the model through `torch.export` and StableHLO,
    which needs the `torch_xla` package; without it there is no SavedModel to
    check (the layers' SavedModels are checked on the other backends).
    """
    if keras.backend.backend() != "torch":
        return True
    return importlib.util.find_spec("torch_xla") is not None


def _saved_model_script(case: LayerCase, directory: Path) -> tuple[str, str]:
    """Exports the model; returns the script that serves it without the package, and its line.

    The script must run before anything imports `case.package`: it installs an
    import hook that refuses the package, and removes it when done.
    """
    model = case.model()
    path = directory / "saved_model"
    model.export(str(path), format="tf_saved_model", verbose=False)
    arrays = {}
    runs = 0
    for batch in case.batch_sizes:
        for which in (0, 1):
            x = case.sample(batch, which, offset=7)
            outputs = model.predict_on_batch(case.model_inputs(x))
            _save_run(arrays, f"{batch}_{which}", x, outputs)
            runs += len(_as_list(outputs))
    np.savez(directory / "saved_io.npz", **arrays)
    read_inputs = _READ_INPUTS.format(multi=bool(case.named_inputs))
    script = f"""
import sys

class RefuseKerasSeq:  # loading must not need the library that built the model
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {case.package!r}:
            raise ImportError(f"{{name}} may not be imported here")

refuse = RefuseKerasSeq()
sys.meta_path.insert(0, refuse)
import numpy as np
import tensorflow as tf
{read_inputs}
loaded = tf.saved_model.load({str(path)!r})
data = np.load({str(directory / "saved_io.npz")!r})
checked = 0
for run in sorted({{k.split("__")[1] for k in data.files}}):
    outputs = loaded.serve(read_inputs(data, run, tf.constant))
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(
            output.numpy(), data[f"out__{{run}}__{{index}}"],
            atol={case.atol}, rtol={case.atol})
        checked += 1
assert not [m for m in sys.modules if m.split(".")[0] == {case.package!r}]
sys.meta_path.remove(refuse)
print("served", checked)
"""
    return script, f"served {runs}"


def _run_scripts(parts: Sequence[tuple[str, str]], directory: Path) -> None:
    """Runs the scripts one after another in one fresh interpreter; each must print its line."""
    out = _run_fresh_python("\n".join(script for script, _ in parts), cwd=directory)
    for _, line in parts:
        assert line in out, f"expected {line!r} in the fresh process's output:\n{out}"


def check_keras_file(case: LayerCase, directory: Path) -> None:
    """A model saved to `.keras` reloads with `safe_mode=True` in a fresh process."""
    _run_scripts([_keras_file_script(case, directory)], directory)


def check_saved_model(case: LayerCase, directory: Path) -> None:
    """`model.export` gives a SavedModel that TensorFlow alone loads and runs.

    The fresh process imports only NumPy and TensorFlow, and refuses any
    import of `case.package`, so the model cannot lean on the library that
    built it. (TensorFlow itself imports Keras for `tf.keras`; nothing here
    uses it.) It runs every combination of `case.batch_sizes` and the two
    sequence lengths (of every input at once). `serve` takes the one input,
    or a dict of the named inputs.
    """
    _run_scripts([_saved_model_script(case, directory)], directory)


def check_saved_files(case: LayerCase, directory: Path) -> None:
    """`check_saved_model` then `check_keras_file`, sharing one fresh interpreter.

    Starting TensorFlow takes seconds; both checks need a process that has
    never seen the layer, and the SavedModel half runs first, before the
    package is imported, so one process serves both.
    """
    saved = directory / "saved_model"
    keras_file = directory / "keras_file"
    saved.mkdir(parents=True, exist_ok=True)
    keras_file.mkdir(parents=True, exist_ok=True)
    parts = [_saved_model_script(case, saved), _keras_file_script(case, keras_file)]
    _run_scripts(parts, directory)


def check_mixed_precision(case: LayerCase) -> None:
    """Under `mixed_float16` the layer computes in float16 with float32 weights."""
    x = case.sample(4, 1)
    full = case.make()
    reference = case.call(full, x)
    half = case.make(dtype="mixed_float16")
    outputs = case.call(half, x)
    half.set_weights(full.get_weights())
    outputs = case.call(half, x)
    for output in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        assert keras.backend.standardize_dtype(output.dtype) == "float16", output.dtype
    for weight in half.weights:
        assert keras.backend.standardize_dtype(weight.dtype) == "float32", weight.path
    # float16 rounds each result to 11 significant bits (unit roundoff 2**-11, about
    # 4.9e-4), and a block chains dozens of such operations. Element by element the
    # error has a long tail: a layer normalization over a row whose variance happens to
    # be small divides by a small deviation, so with random weights one element in a
    # few hundred draws strays past 0.03 while the rest agree to 1e-3 (and CPUs with
    # AVX-512 take other float16 kernels than those without). The error of the whole
    # output relative to its size is steady: at most 2.2e-3 over 60 weight draws of a
    # Transformer decoder block. So the output must agree to 1% in norm, and no element
    # may be off by more than 0.1, which still catches one wrong position (a mask lost
    # in float16 moves its outputs by about their own size, ~1).
    _assert_close_in_norm(
        [keras.ops.cast(o, "float32") for o in _as_list(outputs)],
        reference,
        relative=1e-2,
        atol=0.1,
        what="mixed_float16 against float32",
    )


def _mask_patterns(time: int, rotation: int) -> np.ndarray:
    """Five `(time,)` masks: full, right-padded, left-padded, one step, none.

    The rows of the second, third ... masked input are rotated by one more
    row each, so that a row pairs e.g. a full query with a fully masked value.
    """
    steps = np.arange(time)
    patterns = np.stack(
        [
            np.ones(time, bool),
            steps < max(time - 3, 1),  # right-padded
            steps >= time // 2,  # left-padded
            steps == 0,
            np.zeros(time, bool),  # fully masked
        ]
    )
    return np.roll(patterns, rotation, axis=0)


def _time_axis(case: LayerCase, index: int, output: np.ndarray, time: int | None) -> int | None:
    if case.output_time_axes is not None:
        return case.output_time_axes[index]
    if time is not None and output.ndim >= 3 and output.shape[1] == time:
        return 1
    return None


def check_masking(case: LayerCase) -> None:
    """Masked steps do not influence the output, with right and left padding.

    Each masked input gets rows: full length, right-padded, left-padded, a
    single valid step and fully masked (rotated by a row per further input),
    and its masked steps are replaced by large noise. Outputs must stay
    finite and, at the first input's unmasked steps (all of a row's output
    where it has no time axis, see `LayerCase.output_time_axes`), unchanged.
    """
    if not case.masking:
        return
    x = case.sample(5, 1)
    noise = case.sample(5, 1, offset=99)
    masks, x_changed = {}, dict(x)
    for spec in case.input_specs:
        if spec.masked and spec.time_axis:
            mask = _mask_patterns(case.lengths(spec)[1], rotation=len(masks))
            masks[spec.name] = mask
            keep = mask.reshape(mask.shape + (1,) * (x[spec.name].ndim - 2))
            x_changed[spec.name] = np.where(keep, x[spec.name], noise[spec.name] * 10.0)
    first = case.input_specs[0]
    first_mask = masks.get(first.name)
    layer = case.make()
    outputs = _as_list(case.call(layer, x, masks))
    changed = _as_list(case.call(layer, x_changed, masks))
    for index, (output, other) in enumerate(zip(outputs, changed, strict=True)):
        assert np.all(np.isfinite(output)), f"masked input gave non-finite output {index}"
        time = first_mask.shape[1] if first_mask is not None else None
        axis = _time_axis(case, index, output, time)
        if axis is not None and first_mask is not None:
            shape = [1] * output.ndim
            shape[0], shape[axis] = first_mask.shape
            keep = np.broadcast_to(first_mask.reshape(shape), output.shape)
            np.testing.assert_allclose(
                output[keep], other[keep], atol=case.atol, rtol=case.atol, err_msg=f"output {index}"
            )
        else:
            np.testing.assert_allclose(
                output, other, atol=case.atol, rtol=case.atol, err_msg=f"output {index}"
            )


def check_jit_fit_step(case: LayerCase) -> None:
    """One `fit` step with `jit_compile=True` runs, stays finite and changes the weights.

    (A layer without weights, such as `ScaledDotProductAttention`, has only
    to compile and run.)
    """
    model = case.model()
    x = case.model_inputs(case.sample(8, 0))
    targets = [
        np.random.default_rng(1).normal(size=o.shape) for o in _as_list(model.predict_on_batch(x))
    ]
    before = [np.copy(w) for w in model.get_weights()]
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse", jit_compile=True)
    with warnings.catch_warnings():
        if not before:
            warnings.filterwarnings("ignore", "The model does not have any trainable weights")
        history = model.fit(x, targets if len(targets) > 1 else targets[0], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][-1])
    changed = [not np.allclose(b, a) for b, a in zip(before, model.get_weights(), strict=True)]
    assert any(changed) or not before, "a fit step left every weight unchanged"


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
    """Runs the named checks (all by default) on `case`, writing files under `directory`.

    When both `keras_file` and `saved_model` are asked for, they run in one
    fresh interpreter (`check_saved_files`), where the SavedModel is served
    before the package is imported. `saved_model` is left out where
    `saved_model_export_available()` is False (PyTorch without torch_xla).
    """
    directory = Path(directory)
    checks = list(checks)
    if "saved_model" in checks and not saved_model_export_available():
        checks.remove("saved_model")  # PyTorch without torch_xla: see the function
    if "keras_file" in checks and "saved_model" in checks:
        checks[checks.index("keras_file")] = "saved_files"
        checks.remove("saved_model")
    for name in checks:
        function = globals()[f"check_{name}"]
        if "directory" in inspect.signature(function).parameters:
            sub = directory / name
            sub.mkdir(parents=True, exist_ok=True)
            function(case, sub)
        else:
            function(case)
