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
import traceback
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


# The checks that reload saved files in a fresh interpreter (`check_saved_layers`).
SAVED_CHECKS: Sequence[str] = ("saved_model", "keras_file")

# What `check_saved_layers` allows the fresh interpreter: a minute a case on top of its start.
CASE_TIMEOUT_S = 60

# The fresh interpreter's results, one line each: `LAYER-CHECK {"case", "check", "error"}`.
_RESULT = "LAYER-CHECK "
_MISSING = object()

# Run as `python -c _FRESH_SCRIPT manifest.json`. The manifest lists the cases: their folder,
# package, tolerance, whether the model takes a dict, and the number of outputs of each saved
# file (absent when the check is not run). A folder holds `saved_model/` and `saved_io.npz`,
# `model.keras` and `keras_io.npz`; the arrays are the inputs `in__<run>__<input name>` and
# the outputs computed in the saving process `out__<run>__<index>`. Every SavedModel is served
# first, while any import of a case's package is refused; then each package is imported and
# every `.keras` file loaded with `safe_mode=True`. A case's failure is reported and the next
# case runs.
_FRESH_SCRIPT = """
import importlib, json, sys, traceback

cases = json.load(open(sys.argv[1], encoding="utf-8"))
packages = {case["package"] for case in cases}


def report(case, check, error=None):
    line = json.dumps({"case": case["name"], "check": check, "error": error})
    print(RESULT + line, flush=True)


def read_inputs(data, run, convert, multi):
    prefix = "in__" + run + "__"
    inputs = {k[len(prefix):]: convert(data[k]) for k in data.files if k.startswith(prefix)}
    return inputs if multi else next(iter(inputs.values()))


def compare(outputs, data, run, case, check, to_numpy):
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    expected = case[check]
    assert len(outputs) == expected, f"run {run}: {len(outputs)} outputs, expected {expected}"
    for index, output in enumerate(outputs):
        np.testing.assert_allclose(
            to_numpy(output), data[f"out__{run}__{index}"], atol=case["atol"],
            rtol=case["atol"], err_msg=f"run {run}, output {index}")


def runs(data):
    return sorted({k.split("__")[1] for k in data.files})


class RefusePackages:  # serving must not need the library that built the model
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in packages:
            raise ImportError(f"{name} may not be imported here")


refuse = RefusePackages()
sys.meta_path.insert(0, refuse)
import numpy as np

served = [case for case in cases if case.get("saved_model")]
if served:
    import tensorflow as tf
for case in served:
    try:
        loaded = tf.saved_model.load(case["folder"] + "/saved_model")
        data = np.load(case["folder"] + "/saved_io.npz")
        for run in runs(data):
            outputs = loaded.serve(read_inputs(data, run, tf.constant, case["multi"]))
            compare(outputs, data, run, case, "saved_model", lambda output: output.numpy())
        leaked = [m for m in sys.modules if m.split(".")[0] in packages]
        assert not leaked, f"serving imported {leaked}"
        report(case, "saved_model")
    except Exception:
        report(case, "saved_model", traceback.format_exc())
sys.meta_path.remove(refuse)

import keras

for case in [case for case in cases if case.get("keras_file")]:
    try:
        importlib.import_module(case["package"])  # registers the layers
        model = keras.saving.load_model(case["folder"] + "/model.keras", safe_mode=True)
        data = np.load(case["folder"] + "/keras_io.npz")
        for run in runs(data):
            outputs = model.predict_on_batch(read_inputs(data, run, np.asarray, case["multi"]))
            compare(outputs, data, run, case, "keras_file", keras.ops.convert_to_numpy)
        report(case, "keras_file")
    except Exception:
        report(case, "keras_file", traceback.format_exc())
""".replace("RESULT", repr(_RESULT))


def _save_run(arrays: dict, run: str, inputs: Mapping[str, np.ndarray], outputs) -> int:
    """Adds one run's inputs and outputs to `arrays`; returns the number of outputs."""
    for name, value in inputs.items():
        arrays[f"in__{run}__{name}"] = value
    outputs = _as_list(outputs)
    for index, output in enumerate(outputs):
        arrays[f"out__{run}__{index}"] = output
    return len(outputs)


def _export_saved_model(case: LayerCase, model: keras.Model, folder: Path) -> int:
    """Exports `model` with its outputs for every batch size and length; returns their number."""
    model.export(str(folder / "saved_model"), format="tf_saved_model", verbose=False)
    arrays = {}
    for batch in case.batch_sizes:
        for which in (0, 1):
            x = case.sample(batch, which, offset=7)
            outputs = model.predict_on_batch(case.model_inputs(x))
            count = _save_run(arrays, f"{batch}_{which}", x, outputs)
    np.savez(folder / "saved_io.npz", **arrays)
    return count


def _save_keras_file(case: LayerCase, model: keras.Model, folder: Path) -> int:
    """Saves `model` to `.keras` with its outputs for one input; returns their number."""
    model.save(folder / "model.keras")
    x = case.sample(3, 1)
    arrays = {}
    count = _save_run(arrays, "0", x, model.predict_on_batch(case.model_inputs(x)))
    np.savez(folder / "keras_io.npz", **arrays)
    return count


def _saved_checks(checks: Sequence[str]) -> list[str]:
    unknown = [check for check in checks if check not in SAVED_CHECKS]
    if unknown:
        raise ValueError(f"Unknown saved-file checks {unknown}; expected some of {SAVED_CHECKS}.")
    checks = [check for check in SAVED_CHECKS if check in checks]
    if "saved_model" in checks and not saved_model_export_available():
        checks.remove("saved_model")  # PyTorch without torch_xla: see the function
    return checks


def _run_fresh_python(manifest: Path, cases: int) -> tuple[str, str]:
    """Runs `_FRESH_SCRIPT` over `manifest` in a new interpreter; returns what it printed and how
    it ended (empty when it exited normally), so that the results it gave before a crash or a
    timeout still count."""
    timeout = SUBPROCESS_TIMEOUT_S + CASE_TIMEOUT_S * cases
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONDONTWRITEBYTECODE="1")
    try:
        result = subprocess.run(
            [sys.executable, "-c", _FRESH_SCRIPT, str(manifest)],
            cwd=manifest.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        out, err = (
            part.decode(errors="replace") if isinstance(part, bytes) else (part or "")
            for part in (error.stdout, error.stderr)
        )
        return out, f"the fresh process ran past {timeout} s:\n{err[-4000:]}"
    if result.returncode != 0:
        return result.stdout, f"the fresh process exited with {result.returncode}:\n" + (
            result.stderr[-4000:]
        )
    return result.stdout, ""


def _folder_name(index: int, name: str) -> str:
    return f"{index:03d}_" + "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def check_saved_layers(
    cases: Mapping[str, LayerCase], directory: Path, checks: Sequence[str] = SAVED_CHECKS
) -> None:
    """Saves every case's model here, then reloads them all in one fresh interpreter.

    `cases` names each case; each model is saved under its own folder of
    `directory`. Starting Python with TensorFlow takes seconds, so one
    interpreter, which has never seen the layers, checks every case:

    - `saved_model` (`check_saved_model`): `model.export` gives a SavedModel
      that TensorFlow alone serves, for every combination of
      `case.batch_sizes` and the two sequence lengths. All SavedModels are
      served first, while any import of a case's package is refused, so a
      model cannot lean on the library that built it. (TensorFlow itself
      imports Keras for `tf.keras`; nothing here uses it.) `serve` takes the
      one input, or a dict of the named inputs. Left out where
      `saved_model_export_available()` is False (PyTorch without torch_xla).
    - `keras_file` (`check_keras_file`): the model saved to `.keras` reloads
      with `safe_mode=True` once the package is imported.

    The outputs must equal those computed in this process within `case.atol`
    (absolute and relative). A failing case does not stop the others: the
    `AssertionError` names every case and check that failed, each with its
    error.
    """
    directory = Path(directory)
    checks = _saved_checks(checks)
    failures, manifest = [], []
    for index, (name, case) in enumerate(cases.items()):
        folder = directory / _folder_name(index, name)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            model = case.model()
            entry = {"name": name, "folder": str(folder), "package": case.package}
            entry.update(atol=case.atol, multi=bool(case.named_inputs))
            if "saved_model" in checks:
                entry["saved_model"] = _export_saved_model(case, model, folder)
            if "keras_file" in checks:
                entry["keras_file"] = _save_keras_file(case, model, folder)
        except Exception:
            failures.append((name, "saving", traceback.format_exc()))
            continue
        manifest.append(entry)
    if manifest and checks:
        path = directory / "manifest.json"
        path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        out, ended = _run_fresh_python(path, len(manifest))
        results = {}
        for line in out.splitlines():
            if line.startswith(_RESULT):
                result = json.loads(line[len(_RESULT) :])
                results[result["case"], result["check"]] = result["error"]
        for check in checks:  # the order the fresh process runs them in
            for entry in manifest:
                error = results.get((entry["name"], check), _MISSING)
                if error is _MISSING:
                    error = "no result: the fresh process ended before it (see below)"
                if error is not None:
                    failures.append((entry["name"], check, error))
        if ended:
            failures.append(("(every case)", "the fresh process", ended))
    if failures:
        names = ", ".join(dict.fromkeys(name for name, _, _ in failures))
        raise AssertionError(
            f"Saved-file checks failed for {names}:\n\n"
            + "\n\n".join(f"{name}, {what}: {error}" for name, what, error in failures)
        )


def _one_case(case: LayerCase) -> dict[str, LayerCase]:
    return {type(case.make()).__name__: case}


def check_keras_file(case: LayerCase, directory: Path) -> None:
    """A model saved to `.keras` reloads with `safe_mode=True` in a fresh process."""
    check_saved_layers(_one_case(case), directory, checks=("keras_file",))


def check_saved_model(case: LayerCase, directory: Path) -> None:
    """`model.export` gives a SavedModel that TensorFlow alone loads and runs in a fresh process.

    See `check_saved_layers`, which checks many cases in one process.
    """
    check_saved_layers(_one_case(case), directory, checks=("saved_model",))


def check_saved_files(case: LayerCase, directory: Path) -> None:
    """`check_saved_model` then `check_keras_file`, sharing one fresh interpreter."""
    check_saved_layers(_one_case(case), directory)


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


# The checks that run in this process (`check_layer` runs them one by one).
IN_PROCESS_CHECKS: Sequence[str] = tuple(c for c in ALL_CHECKS if c not in SAVED_CHECKS)
# Those that run the layer eagerly and compile nothing: `jit_fit_step` compiles a training
# step, which takes seconds with XLA and tens of seconds with `torch.compile`.
EAGER_CHECKS: Sequence[str] = tuple(c for c in IN_PROCESS_CHECKS if c != "jit_fit_step")


def check_layer(case: LayerCase, directory: Path, checks: Sequence[str] = ALL_CHECKS) -> None:
    """Runs the named checks (all by default) on `case`, writing files under `directory`.

    The saved-file checks (`keras_file`, `saved_model`) run together in one
    fresh interpreter (`check_saved_layers`, which also takes many cases for
    one interpreter), where the SavedModel is served before the package is
    imported. `saved_model` is left out where `saved_model_export_available()`
    is False (PyTorch without torch_xla).
    """
    saved = [name for name in checks if name in SAVED_CHECKS]
    for name in checks:
        if name not in SAVED_CHECKS:
            globals()[f"check_{name}"](case)
        elif name == saved[0]:
            check_saved_layers(_one_case(case), Path(directory) / "saved_files", checks=saved)
