"""Export a finished run's model: a `.keras` file, a SavedModel, a Python script, ONNX, LiteRT.

    export(store, run_id, "keras")       <run>/model.keras (written by the engine)
    export(store, run_id, "savedmodel")  <run>/export/savedmodel/ and savedmodel.zip
    export(store, run_id, "python")      <run>/export/model.py
    export(store, run_id, "onnx")        <run>/export/model.onnx
    export(store, run_id, "litert")      <run>/export/model.tflite (batch_size=1 unless given)
    export(store, run_id, "onnx", decoding=Greedy())   a translator's file, greedy decoding

- `keras`: the model as the engine saved it; loads with
  `keras.saving.load_model(path, safe_mode=True)` (import keras_seq first, so
  that its layers are registered).
- `savedmodel`: `model.export(path, format="tf_saved_model")`, a SavedModel
  whose `serve` endpoint runs the model and loads with TensorFlow alone
  (`tf.saved_model.load(path).serve(x)`); for an encoder–decoder (a model with
  `encode` and `decode_step`, such as `keras_seq.models.Seq2Seq`) it is the
  `Translator`'s export instead, whose `serve` maps source ids to target ids
  and whose `translate` maps texts to translations (tokeniser and
  vocabularies in the graph), decoding by beam search (`decoding`, below).
  Zipped as well, for downloading. The vocabularies are the run's own (its
  `vocabularies.json` artifact, `stored_task`), so that a moved or changed
  data file changes nothing; a run from before that artifact makes them
  again from its spec.
- `python`: a standalone script whose `build_model()` rebuilds the same
  architecture with keras and keras_seq layers, each layer a constructor call
  with literal arguments (`builder_ui.results.model_source`). It is checked before it
  is written: run here, it must give the same parameter count and the same
  layer configs.
- `onnx` (for onnxruntime) and `litert` (a TensorFlow Lite flatbuffer, for
  the LiteRT interpreter): the model's forward pass, or for an
  encoder–decoder its decode loop from source ids to target ids,
  scores and lengths (no text: see `builder_ui.results.runtime_files`, which
  also says how each is converted and why). A translator's ONNX file keeps
  both vocabularies in its metadata (`onnx_file.VOCABULARIES_KEY`), so that
  text can be encoded and decoded beside it, and its decoding
  (`onnx_file.DECODING_KEY`). A LiteRT file has a fixed batch
  size (`batch_size`, default 1). A run that trained in mixed precision, or
  a backend other than TensorFlow, is refused with the reason; so is a model
  with an operator the format has no conversion for (named).

An encoder–decoder's `savedmodel`, `onnx` and `litert` exports decode as
`decoding` says: `keras_seq.models.Beam()` by default (beam search of width 4
with length penalty 0.6, three to four BLEU above greedy decoding in
benchmarks/results/translation.md), another `Beam(width, length_penalty,
coverage_penalty)`, or `Greedy()`. The SavedModel records it (its `decoding`
signature and `assets.extra/decoding.json`), the ONNX file in its metadata.
A decoding given for another format, or for a model without a decode loop, is
refused: it would change nothing.

Only a `done` run has a model: a diverged, failed or cancelled run exports
nothing. Every file is written to a temporary name and renamed into place, and
recorded as an artifact of the run (`RunStore.set_artifact`). `out=` also
copies the export there (atomically too). A recorded path is read only inside the
run's own folder (`artifact`, `builder_ui.engine.artifacts`): a record naming another
file is refused, naming the run and the field.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import keras
import numpy as np

import keras_seq  # registers its layers and models, which `load_model` reads
from builder_ui import files
from builder_ui.builders import load_spec, load_task
from builder_ui.engine import artifacts, keras_globals
from builder_ui.engine.artifacts import MODEL_FILE, VOCABULARIES_FILE
from builder_ui.engine.store import RunNotFoundError, RunStore
from builder_ui.extras import missing_extra
from builder_ui.results.inspection import translation_length
from builder_ui.results.model_source import SourceError, model_source
from builder_ui.specs import dump_spec
from keras_seq.models import strategies
from keras_seq.models.translator import Translator
from keras_seq.tasks import ImageSpec, SequenceSpec, TargetSpec, TaskData, Vocabulary

FORMATS = ("keras", "savedmodel", "python", "onnx", "litert")
EXPORT_DIR = "export"
SAVEDMODEL_DIR = "savedmodel"
SAVEDMODEL_ZIP = "savedmodel.zip"
PYTHON_FILE = "model.py"
ONNX_FILE = "model.onnx"
LITERT_FILE = "model.tflite"
# The largest batch a LiteRT file may be written for; far past anything useful.
MAX_LITERT_BATCH_SIZE = 2**16


class ExportError(ValueError):
    """A run that cannot be exported in the format asked for; the message says why."""


def check_format(format: str) -> str:
    if format not in FORMATS:
        raise ExportError(
            f"Received an invalid value for argument `format`, expected one of "
            f"{', '.join(repr(f) for f in FORMATS)}, got {format!r}."
        )
    return format


def finished_record(store: RunStore, run_id: str):
    """The record of a run that has a model to export, or an `ExportError` saying why not."""

    try:
        record = store.get(run_id, history=False)
    except RunNotFoundError as error:
        raise ExportError(str(error)) from None
    if record.status != "done":
        why = {
            "diverged": "its loss became NaN or infinite, so no model was saved",
            "failed": "it failed, so no model was saved",
            "cancelled": "it was cancelled, so no model was saved",
            "interrupted": "it was interrupted; resume it first (keras-seq resume)",
            "running": "it is still training",
            "queued": "it has not started",
        }[record.status]
        raise ExportError(
            f"Run {run_id!r} is {record.status!r}: only a finished ('done') run can be "
            f"exported; {why}."
        )
    if MODEL_FILE not in record.artifacts or not artifact(store, run_id, MODEL_FILE).is_file():
        raise ExportError(f"Run {run_id!r} is done but its {MODEL_FILE} is missing from the store.")
    return record


def artifact(store: RunStore, run_id: str, name: str) -> Path:
    """The run's artifact `name`, or an `ExportError` if its recorded path leads out of the
    run's folder (`builder_ui.engine.artifacts`)."""
    try:
        return artifacts.artifact_path(store, run_id, name)
    except artifacts.ArtifactError as error:
        raise ExportError(str(error)) from None


def load_trained_model(store: RunStore, run_id: str) -> Any:
    """The trained model of a finished run, loaded with `safe_mode=True`.

    The file is first checked to be a zip that unpacks within bounds
    (`artifacts.check_model_archive`), before Keras is loaded or reads it.
    """
    finished_record(store, run_id)
    path = artifact(store, run_id, MODEL_FILE)
    try:
        artifacts.check_model_archive(path, what=f"Run {run_id!r}: its model file")
    except artifacts.ArtifactError as error:
        raise ExportError(str(error)) from None

    try:
        return keras.saving.load_model(path, safe_mode=True)
    except Exception as error:  # a damaged or foreign file: say which and why, no traceback
        raise ExportError(
            f"Run {run_id!r}: its model file {str(path)!r} cannot be loaded: "
            f"{type(error).__name__}: {error}"
        ) from error


def stored_task(store: RunStore, run_id: str) -> Any:
    """The task a run trained on, as its `vocabularies.json` artifact records it; None without one.

    A keras_seq `TaskData` with the run's vocabularies, input and target
    specs, name, description and params, and empty train and validation
    splits: enough to read typed text and write translations as the model
    was trained to, whatever became of the data file since. Runs written
    before the artifact existed have none (None): rebuild their task from
    the spec (`builders.load_task`).

    Raises:
        ExportError: The artifact is recorded but missing or unreadable
            (named, with the reason).
    """
    record = store.get(run_id, history=False)
    if VOCABULARIES_FILE not in record.artifacts:
        return None
    path = artifact(store, run_id, VOCABULARIES_FILE)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return _task_from_document(document)
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise ExportError(
            f"Run {run_id!r}: its {VOCABULARIES_FILE} ({str(path)!r}) cannot be read: "
            f"{type(error).__name__}: {error}"
        ) from None


def _task_from_document(document: dict[str, Any]) -> Any:
    fields = {k: v for k, v in document["inputs"].items() if k not in ("dtype", "kind")}
    if document["inputs"]["kind"] == ImageSpec.kind:  # a captioning task's images
        inputs = ImageSpec(**fields)
    else:
        inputs = SequenceSpec(kind=document["inputs"]["kind"], **fields)
    targets = TargetSpec(**{k: v for k, v in document["targets"].items() if k != "dtype"})
    vocabularies = {
        side: None if document[side] is None else Vocabulary.from_config(document[side])
        for side in ("source_vocabulary", "target_vocabulary")
    }
    x = np.zeros((0, *inputs.shape), dtype=inputs.dtype)
    y = np.zeros((0, *targets.shape), dtype=targets.dtype)
    return TaskData(
        x_train=x,
        y_train=y,
        x_val=x,
        y_val=y,
        name=document["task"],
        inputs=inputs,
        targets=targets,
        description=document["description"],
        params=document["params"],
        **vocabularies,
    )


# The file of each single-file format, and its suffix (`load_model` refuses a .keras file
# without it).
FILES = {"keras": MODEL_FILE, "python": PYTHON_FILE, "onnx": ONNX_FILE, "litert": LITERT_FILE}
SUFFIXES = {format: Path(name).suffix for format, name in FILES.items()}


def export(
    store: RunStore,
    run_id: str,
    format: str,
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    batch_size: int | None = None,
    decoding: Any = None,
) -> Path:
    """Export a finished run's model; see the module docstring for the formats.

    Args:
        store: The run store.
        run_id: A `done` run.
        format: `"keras"`, `"savedmodel"`, `"python"`, `"onnx"` or `"litert"`.
        out: Also copy the export to this path (a file, or for `savedmodel`
            a directory; its parent is created). A file path without a
            suffix gets the format's (`.keras`, `.py`, `.onnx`, `.tflite`);
            an existing directory given for a file export receives the file.
            What is there already is refused (see `force`).
        force: Replace an existing file of the same kind, or a directory
            holding a SavedModel (`saved_model.pb`). A directory holding
            anything else is never replaced, so an export cannot delete what
            it did not write.
        batch_size: `litert` only: the batch size the file takes (default 1).
        decoding: An encoder–decoder's `savedmodel`, `onnx` or `litert`
            only: `keras_seq.models.Beam(...)` or `Greedy()`. Default None:
            `Beam()` for an encoder–decoder, nothing for another model.

    Returns:
        The path of the export: `out` if given, else the artifact in the
        run's directory (for `savedmodel`, the directory; the zip is beside it).

    Raises:
        ExportError: An unknown format, a run that is not `done`, or a model
            that cannot be exported in this format (with the reason).
    """
    check_format(format)
    batch_size = _check_batch_size(format, batch_size)
    decoding = _check_decoding(format, decoding)
    target = None if out is None else _out_path(Path(out), format, force)
    record = finished_record(store, run_id)
    if format == "keras":
        path = artifact(store, run_id, MODEL_FILE)
    elif store.read_only is None:
        path = _export_to(_Place(store, run_id), record, format, batch_size, decoding)
    elif target is None:
        raise ExportError(
            f"The run store {str(store.directory)!r} is read-only ({store.read_only}), so the "
            f"{format!r} export cannot be kept in run {run_id!r}'s folder: give out (--out) to "
            "write it elsewhere"
        )
    else:  # a read-only store is read, never written: the export is made in a scratch folder
        with tempfile.TemporaryDirectory(prefix="keras-seq-export-") as scratch:
            place = _Place(store, run_id, Path(scratch))
            path = _export_to(place, record, format, batch_size, decoding)
            return files.copy(path, target)
    return path if target is None else files.copy(path, target)


def _export_to(place: _Place, record, format: str, batch_size: int | None, decoding: Any) -> Path:
    if format == "savedmodel":
        return _export_savedmodel(place, record, decoding)
    if format == "python":
        return _export_python(place, record)
    return _export_runtime(place, record, format, batch_size, decoding)


class _Place:
    """Where an export is written: the run's `export/` folder, each file an artifact of the
    run, or a scratch folder (`scratch`) when the store is read-only."""

    def __init__(self, store: RunStore, run_id: str, scratch: Path | None = None):
        self.store, self.run_id, self.scratch = store, run_id, scratch

    @contextlib.contextmanager
    def writing(self, name: str):
        """A path to write the export `name` to; in place (atomically) when the block ends."""
        if self.scratch is None:
            with self.store.atomic_artifact(self.run_id, f"{EXPORT_DIR}/{name}") as path:
                yield path
        else:
            with files.atomic_path(self.scratch / name) as path:
                yield path

    def path(self, name: str) -> Path:
        """Where the export `name` was written."""
        if self.scratch is None:
            return artifact(self.store, self.run_id, name)
        return self.scratch / name


def _check_batch_size(format: str, batch_size: int | None) -> int | None:
    if batch_size is None:
        return 1 if format == "litert" else None
    if format != "litert":
        raise ExportError(
            f"batch_size: only for the 'litert' format (a LiteRT file has a fixed batch size), "
            f"got batch_size={batch_size!r} with format {format!r}"
        )
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, (int, np.integer))
        or not 1 <= batch_size <= MAX_LITERT_BATCH_SIZE
    ):
        raise ExportError(
            f"batch_size: expected an integer from 1 to {MAX_LITERT_BATCH_SIZE}, got {batch_size!r}"
        )
    return int(batch_size)


# The formats whose files hold an encoder–decoder's decode loop, and so take a decoding.
DECODING_FORMATS = ("savedmodel", "onnx", "litert")


def _check_decoding(format: str, decoding: Any) -> Any:
    """`decoding` checked: None, or `Greedy()` / `Beam(...)` for a format with a decode loop."""
    if decoding is None:
        return None
    if format not in DECODING_FORMATS:
        raise ExportError(
            f"decoding: only for the {', '.join(repr(f) for f in DECODING_FORMATS)} exports "
            f"of an encoder–decoder (their files hold the decode loop), got {decoding!r} with "
            f"format {format!r}"
        )

    try:
        return strategies.exportable(decoding)
    except ValueError as error:
        raise ExportError(str(error)) from None


def _decoding_of(model: Any, record, decoding: Any) -> Any:
    """The decoding of an encoder–decoder's export (`Beam()` unless given), checked for `model`;
    a decoding given for a model without a decode loop is refused."""
    if not _is_encoder_decoder(model):
        if decoding is None:
            return None
        raise ExportError(
            f"Run {record.id!r}: decoding ({decoding!r}) is for an encoder–decoder's export, "
            f"and its model ({type(model).__name__}) has no decode loop; export it without one"
        )
    if hasattr(model, "export_saved_model"):
        model = model.model  # a Translator: the decoding is its encoder–decoder's
    try:
        return strategies.exportable(strategies.Beam() if decoding is None else decoding, model)
    except ValueError as error:
        raise ExportError(f"Run {record.id!r}: {error}") from None


def _out_path(out: Path, format: str, force: bool) -> Path:
    """Where `out=` puts the export, checked before anything is exported or written.

    A path that is there but is neither a regular file nor a folder (`/dev/null`, a
    pipe, a socket) is refused, with or without force: its name was given a suffix and
    the export written beside it, in /dev.
    """
    out = out.expanduser()
    _refuse_special(out)
    if format in SUFFIXES:
        if out.is_dir():
            out = out / FILES[format]
        elif not out.suffix:
            out = out.with_suffix(SUFFIXES[format])
        elif format == "keras" and out.suffix != ".keras":
            raise ExportError(
                f"out: a Keras model file must end in .keras (keras.saving.load_model refuses "
                f"other names), got {str(out)!r}"
            )
        if out.is_dir():
            raise ExportError(f"out: {str(out)!r} is a directory; give a file path")
        _refuse_special(out)
        if out.exists() and not force:
            raise ExportError(f"out: {str(out)!r} exists; pass force (--force) to replace it")
        return out
    if out.exists() and not out.is_dir():
        raise ExportError(f"out: {str(out)!r} is a file; a SavedModel is a directory")
    if out.is_dir() and any(out.iterdir()):
        if not (out / "saved_model.pb").is_file():
            raise ExportError(
                f"out: {str(out)!r} is a directory that holds other files (not a SavedModel); "
                "an export never replaces it: choose a new or empty directory"
            )
        if not force:
            raise ExportError(
                f"out: {str(out)!r} holds a SavedModel; pass force (--force) to replace it"
            )
    return out


_SPECIAL_FILES = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_special(out: Path) -> None:
    """Refuse an `out` that exists and is neither a regular file nor a folder."""
    try:
        mode = out.stat().st_mode  # through a symbolic link: what would be written to
    except OSError:
        return  # not there (or not reachable): nothing to replace
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((what for test, what in _SPECIAL_FILES if test(mode)), "a special file")
    raise ExportError(
        f"out: {str(out)!r} is {kind}, not a regular file or a folder; give a file path "
        "(an export is never written to or beside it)"
    )


# --- SavedModel -------------------------------------------------------------------------------


def _export_savedmodel(place: _Place, record, decoding: Any) -> Path:
    if not _has_tensorflow():
        raise ExportError(
            "The 'savedmodel' format needs TensorFlow, which is not installed "
            "(pip install tensorflow); export 'keras' or 'python' instead."
        )
    store = place.store
    model = load_trained_model(store, record.id)
    # Before any file is made: a model that cannot be served this way is refused first.
    decoding = _decoding_of(model, record, decoding)
    translator = _translator(model, record, store) if _is_encoder_decoder(model) else None
    try:
        with place.writing(SAVEDMODEL_DIR) as path:
            if translator is not None:
                translator.export_saved_model(path, decoding=decoding)
            else:
                model.export(str(path), format="tf_saved_model", verbose=False)
    except ExportError:
        raise
    except Exception as error:
        raise ExportError(
            f"Run {record.id!r}: the model could not be exported as a SavedModel with the "
            f"{keras.backend.backend()} backend: {type(error).__name__}: {error}"
        ) from error
    with place.writing(SAVEDMODEL_ZIP) as zip_path:
        zip_savedmodel(place.path(SAVEDMODEL_DIR), zip_path)
    return place.path(SAVEDMODEL_DIR)


def zip_savedmodel(directory: Path, zip_path: Path) -> Path:
    """Zip the SavedModel `directory` as `zip_path`, its files under the directory's name
    (`savedmodel/saved_model.pb`, ...): the download the app offers."""
    archive = shutil.make_archive(
        str(zip_path.with_suffix("")), "zip", root_dir=directory.parent, base_dir=directory.name
    )
    os.replace(archive, zip_path)
    return zip_path


def _has_tensorflow() -> bool:
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def _is_encoder_decoder(model: Any) -> bool:
    return (
        callable(getattr(model, "encode", None)) and callable(getattr(model, "decode_step", None))
    ) or hasattr(model, "export_saved_model")


def _translator(model: Any, record, store: RunStore) -> Any:
    """A `Translator` around a trained encoder–decoder, with its task's vocabularies."""
    if hasattr(model, "export_saved_model"):
        return model  # already a Translator
    if getattr(model, "source_signature", None) is not None:
        raise ExportError(
            f"Run {record.id!r} trained a captioner ({type(model).__name__}), which reads images, "
            "not text: export it as 'keras' or 'python' (its SavedModel, ONNX and LiteRT files "
            "are written for text-to-text models only)."
        )
    # The vocabularies the run recorded (its data file may have moved or changed since);
    # a run from before they were recorded makes them again from its spec.
    task = stored_task(store, record.id)
    if task is None:
        task = load_task(load_spec(record.spec))
    if getattr(task, "source_vocabulary", None) is None or task.target_vocabulary is None:
        raise ExportError(
            f"Run {record.id!r}: task {task.name!r} has no vocabularies, which the "
            "encoder–decoder's SavedModel needs."
        )
    max_length = translation_length(model, task)
    return Translator(model, task.source_vocabulary, task.target_vocabulary, max_length=max_length)


# --- ONNX and LiteRT ---------------------------------------------------------------------------

# The Python packages each runtime format needs (module name: pip name).
PACKAGES = {
    "onnx": {"tensorflow": "tensorflow", "tf2onnx": "tf2onnx", "onnx": "onnx"},
    "litert": {"tensorflow": "tensorflow"},
}


def missing_packages(format: str) -> list[str]:
    """The pip names of the packages `format` needs that are not installed."""
    missing = []
    for module, name in PACKAGES[format].items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _export_runtime(
    place: _Place, record, format: str, batch_size: int | None, decoding: Any
) -> Path:
    """The `onnx` or `litert` file of a run (`results.onnx_file`, `results.litert_file`)."""
    label = {"onnx": "ONNX", "litert": "LiteRT"}[format]
    missing = missing_packages(format)
    if missing:
        needs = f"The {format!r} format needs {', '.join(missing)} (or export 'keras' or 'python')"
        raise ExportError(missing_extra(needs, "export"))
    # Each converter imports TensorFlow at its top (ONNX's, onnx and tf2onnx too): loaded when
    # an export of its format runs, once its packages are known to be there.
    if format == "onnx":
        from builder_ui.results import onnx_file as converter  # TensorFlow, onnx, tf2onnx
    else:
        from builder_ui.results import litert_file as converter  # TensorFlow

    try:
        converter.check_exportable(format, record.precision)
    except converter.ConversionError as error:
        raise ExportError(f"Run {record.id!r} cannot be exported as {label}: {error}") from None
    store = place.store
    model = load_trained_model(store, record.id)
    decoding = _decoding_of(model, record, decoding)
    decode_length, metadata = None, None
    if _is_encoder_decoder(model):
        translator = _translator(model, record, store)
        model, decode_length = translator.model, translator.max_length
        if format == "onnx":  # the file's metadata (a LiteRT file has none)
            metadata = {
                converter.VOCABULARIES_KEY: translator.vocabularies_json(),
                converter.DECODING_KEY: translator.decoding_json(decoding),
            }
    name = FILES[format]
    try:
        with place.writing(name) as path:
            if format == "onnx":
                converter.write_onnx(
                    model,
                    path,
                    decode_length=decode_length,
                    decoding=decoding,
                    metadata=metadata,
                )
            else:
                converter.write_litert(
                    model,
                    path,
                    batch_size=batch_size,
                    decode_length=decode_length,
                    decoding=decoding,
                )
    except converter.ConversionError as error:
        raise ExportError(f"Run {record.id!r} cannot be exported as {label}: {error}.") from None
    except Exception as error:
        first = str(error).strip().splitlines()[:1] or [""]
        raise ExportError(
            f"Run {record.id!r}: the model could not be exported as {label}: "
            f"{type(error).__name__}: {first[0][:500]}"
        ) from error
    return place.path(name)


# --- Python -----------------------------------------------------------------------------------


def _export_python(place: _Place, record) -> Path:

    model = load_trained_model(place.store, record.id)
    if hasattr(model, "export_saved_model") and hasattr(model, "model"):
        model = model.model  # a Translator: the architecture is its encoder–decoder's
    try:
        with keras_globals.dtype_policy("float32"):  # the script runs under the default policy
            source = model_source(model, docstring=_docstring(record, model))
    except SourceError as error:
        raise ExportError(f"Run {record.id!r}: {error}") from error
    with place.writing(PYTHON_FILE) as path:
        path.write_text(source, encoding="utf-8")
    return place.path(PYTHON_FILE)


def _docstring(record, model) -> str:
    spec_text = dump_spec(load_spec(record.spec)).rstrip()
    spec_lines = "\n".join(f"    {line}" for line in spec_text.splitlines())
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""Run {record.id} ({record.name}): its architecture, rebuilt with keras_seq.

Written by `keras-seq export {record.id} --format python` (keras_seq {keras_seq.__version__},
Keras {keras.__version__}) on {date}. `build_model()` returns an uncompiled model with the
same layers and layer configs as the trained one ({model.count_params():,} parameters), with
fresh weights. To copy in the trained weights:

    trained = keras.saving.load_model("model.keras")  # from `--format keras`
    model.set_weights(trained.get_weights())

The run's precision was {record.precision or "float32"}; the script runs under Keras's default
dtype policy, and layers that used another carry it as their `dtype` argument.

The experiment spec it trained with:

{spec_lines}"""


# --- Copying out ------------------------------------------------------------------------------


__all__ = [
    "DECODING_FORMATS",
    "FILES",
    "FORMATS",
    "SUFFIXES",
    "ExportError",
    "artifact",
    "check_format",
    "export",
    "finished_record",
    "load_trained_model",
    "stored_task",
]
