"""Export of real trained runs: the .keras file, SavedModels served by TensorFlow alone, and
Python scripts that rebuild the architecture in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile

import keras
import numpy as np
import pytest

from builder_ui import builders, engine
from builder_ui.engine.store import RunStore
from builder_ui.results import export

pytestmark = pytest.mark.large

TRAIN = {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1}

# Token ids with padding masked, two stacked bidirectional LSTMs: exercises nested layers,
# masks that Keras passes on by itself, and keras.layers only.
BILSTM = {
    "version": 1,
    "name": "export-bilstm",
    "task": {"type": "long_lag", "lag": 6, "n": 100, "num_distractors": 4, "encoding": "ids"},
    "model": {
        "type": "sequence_classifier",
        "embedding_dim": 4,
        "mask_zero": True,
        "encoder": {
            "type": "rnn",
            "cell": "lstm",
            "units": 8,
            "bidirectional": True,
            "num_layers": 2,
        },
    },
    "train": TRAIN,
}
# keras_seq layers: class token, learned positions, a pre-LN Transformer block.
TRANSFORMER = {
    "version": 1,
    "name": "export-transformer",
    "task": {"type": "long_lag", "lag": 6, "n": 100, "encoding": "ids"},
    "model": {
        "type": "sequence_classifier",
        "encoder": {
            "type": "transformer",
            "embed_dim": 8,
            "num_heads": 2,
            "ff_dim": 16,
            "num_layers": 1,
            "norm_first": True,
            "pooling": "class_token",
            "positional": "learned",
        },
    },
    "train": TRAIN,
}
# A subclassed keras_seq model (PointerNetwork) with two inputs.
POINTER = {
    "version": 1,
    "name": "export-pointer",
    "task": {"type": "sort_numbers", "length": 4, "n": 64},
    "model": {"type": "pointer_network", "units": 8},
    "train": TRAIN,
}


SEQ2SEQ = {
    "version": 1,
    "name": "export-seq2seq",
    "task": {"type": "reverse", "length": 5, "n": 64, "vocab_size": 6},
    "model": {
        "type": "seq2seq",
        "cell": "gru",
        "units": 8,
        "embedding_dim": 8,
        "attention": "bahdanau",
    },
    "train": TRAIN,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One store holding a finished run of each model above and one diverged run."""
    store = RunStore(tmp_path_factory.mktemp("runs"))
    records = {}
    for spec in (BILSTM, TRANSFORMER, POINTER, SEQ2SEQ):
        record = engine.run(spec, store=store)
        assert record.status == "done", record.error
        records[spec["name"]] = record
    diverged = store.create_run(BILSTM, name="diverged")
    store.set_status(diverged, "running")
    store.finish(diverged, "diverged", error="The loss became NaN at epoch 1.")
    records["diverged"] = store.get(diverged)
    yield store, records
    store.close()


def _architecture_in_fresh_process(scripts):
    """Run each script's build_model() in a new interpreter; return params and layer configs."""
    code = textwrap.dedent(
        """
        import json, runpy, sys
        out = {}
        for path in sys.argv[1:]:
            model = runpy.run_path(path)["build_model"]()
            out[path] = {
                "params": model.count_params(),
                "layers": [[type(l).__name__, l.get_config()] for l in model.layers],
                "builder_ui": any(m.startswith("builder_ui") for m in sys.modules),
            }
        print(json.dumps(out, default=repr))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, scripts)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _plain(config):
    """A layer config as JSON data, without its build state."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "build_config"}
        if isinstance(value, (list, tuple)):
            return [strip(v) for v in value]
        return value

    return json.loads(json.dumps(strip(config), default=repr))


def test_python_scripts_rebuild_the_same_architecture_in_a_fresh_process(runs):
    store, records = runs
    names = ["export-bilstm", "export-transformer", "export-pointer", "export-seq2seq"]
    scripts = {name: export.export(store, records[name].id, "python") for name in names}
    rebuilt = _architecture_in_fresh_process(scripts.values())
    for name, path in scripts.items():
        trained = keras.saving.load_model(store.artifact_path(records[name].id, "model.keras"))
        got = rebuilt[str(path)]
        assert got["params"] == records[name].params == trained.count_params(), name
        expected = [[type(layer).__name__, layer.get_config()] for layer in trained.layers]
        assert _plain(got["layers"]) == _plain(expected), name
        assert not got["builder_ui"], f"{name}: the script imported builder_ui"


def test_python_script_reads_as_layer_calls_with_literal_arguments(runs):
    store, records = runs
    text = export.export(store, records["export-bilstm"].id, "python").read_text()
    body = text.split("def build_model():", 1)[1]
    assert 'keras.Input((6,), dtype="int32", name="sequence")' in body
    assert "keras.layers.Embedding(6, 4, mask_zero=True" in body
    assert 'keras.layers.LSTM(8, name="lstm_1")' in body
    assert "keras.layers.Bidirectional(" in body
    assert "from_config" not in body and "builder_ui" not in text
    assert records["export-bilstm"].id in text  # the docstring names the run
    transformer = export.export(store, records["export-transformer"].id, "python").read_text()
    assert "from keras_seq.layers import" in transformer
    assert 'TransformerEncoderBlock(2, 16, norm_first=True, name="encoder_block_0")' in transformer
    pointer = export.export(store, records["export-pointer"].id, "python").read_text()
    assert 'PointerNetwork(1, units=8, name="pointer_network")' in pointer
    compile(text, "model.py", "exec")


def test_savedmodels_serve_with_tensorflow_alone(runs, tmp_path):
    store, records = runs
    classifier = records["export-bilstm"]
    translator = records["export-seq2seq"]
    classifier_dir = export.export(store, classifier.id, "savedmodel")
    translator_dir = export.export(store, translator.id, "savedmodel")
    prepared_classifier = builders.prepare(classifier.spec)
    prepared_translator = builders.prepare(translator.spec)
    x = prepared_classifier.x_val[:8].astype("int32")
    source = prepared_translator.task.x_val[:8].astype("int32")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "source.npy", source)
    code = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import tensorflow as tf
        classifier = tf.saved_model.load({str(classifier_dir)!r})
        translator = tf.saved_model.load({str(translator_dir)!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        source = np.load({str(tmp_path / "source.npy")!r})
        np.save({str(tmp_path / "probabilities.npy")!r}, classifier.serve(x).numpy())
        np.save({str(tmp_path / "ids.npy")!r}, translator.serve(source).numpy())
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("keras_seq", "builder_ui")))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("[]")  # neither keras_seq nor builder_ui was needed

    trained = keras.saving.load_model(store.artifact_path(classifier.id, "model.keras"))
    np.testing.assert_allclose(
        np.load(tmp_path / "probabilities.npy"), trained.predict(x, verbose=0), atol=1e-5
    )
    from keras_seq.models import greedy_decode

    seq2seq = keras.saving.load_model(store.artifact_path(translator.id, "model.keras"))
    expected = np.asarray(greedy_decode(seq2seq, source, source.shape[1] + 1).ids)
    np.testing.assert_array_equal(np.load(tmp_path / "ids.npy"), expected)


def test_savedmodel_is_zipped_and_every_export_is_a_recorded_artifact(runs):
    store, records = runs
    run_id = records["export-bilstm"].id
    directory = export.export(store, run_id, "savedmodel")
    export.export(store, run_id, "python")
    artifacts = store.get(run_id).artifacts
    assert artifacts["savedmodel"] == f"{run_id}/export/savedmodel"
    assert artifacts["savedmodel.zip"] == f"{run_id}/export/savedmodel.zip"
    assert artifacts["model.py"] == f"{run_id}/export/model.py"
    with zipfile.ZipFile(store.artifact_path(run_id, "savedmodel.zip")) as archive:
        names = set(archive.namelist())
    assert "savedmodel/saved_model.pb" in names
    on_disk = {
        f"savedmodel/{p.relative_to(directory).as_posix()}"
        for p in directory.rglob("*")
        if p.is_file()
    }
    assert on_disk <= names
    leftovers = [p.name for p in (directory.parent).iterdir() if p.name.startswith(".")]
    assert leftovers == []  # every temporary name was renamed or removed


def test_keras_export_is_the_engines_file_and_out_copies_it(runs, tmp_path):
    store, records = runs
    run_id = records["export-transformer"].id
    assert export.export(store, run_id, "keras") == store.artifact_path(run_id, "model.keras")
    copied = export.export(store, run_id, "keras", out=tmp_path / "copies" / "t.keras")
    assert copied == tmp_path / "copies" / "t.keras"
    model = keras.saving.load_model(copied, safe_mode=True)
    assert model.count_params() == records["export-transformer"].params
    into_dir = export.export(store, run_id, "python", out=tmp_path / "copies")
    assert into_dir == tmp_path / "copies" / "model.py"
    assert sorted(p.name for p in (tmp_path / "copies").iterdir()) == ["model.py", "t.keras"]


@pytest.mark.parametrize("format", ["keras", "savedmodel", "python"])
def test_a_diverged_run_exports_nothing(runs, format):
    store, records = runs
    run_id = records["diverged"].id
    with pytest.raises(export.ExportError) as excinfo:
        export.export(store, run_id, format)
    message = str(excinfo.value)
    assert f"Run {run_id!r} is 'diverged'" in message
    assert "only a finished ('done') run can be exported" in message
    assert "NaN or infinite" in message
    assert store.get(run_id).artifacts == {}
    assert not store.artifact_dir(run_id).exists()


def test_unknown_run_and_unknown_format_are_refused(runs):
    store, records = runs
    with pytest.raises(export.ExportError, match="No run with id 'nope'"):
        export.export(store, "nope", "keras")
    with pytest.raises(export.ExportError, match="expected one of 'keras', 'savedmodel'"):
        export.export(store, records["export-bilstm"].id, "torchscript")


# --- where an export may write -----------------------------------------------------------------


def test_a_file_export_gets_its_suffix_and_never_replaces_a_file_unasked(runs, tmp_path):
    store, records = runs
    run_id = records["export-bilstm"].id
    written = export.export(store, run_id, "keras", out=tmp_path / "bilstm")
    assert written == tmp_path / "bilstm.keras"  # load_model refuses a name without .keras
    assert keras.saving.load_model(written, safe_mode=True).count_params() > 0
    with pytest.raises(export.ExportError, match=r"out: .* must end in \.keras"):
        export.export(store, run_id, "keras", out=tmp_path / "bilstm.h5")
    mine = tmp_path / "notes.py"
    mine.write_text("# the user's own file\n", encoding="utf-8")
    with pytest.raises(export.ExportError, match=r"out: .*notes\.py' exists; pass force"):
        export.export(store, run_id, "python", out=mine)
    assert mine.read_text(encoding="utf-8") == "# the user's own file\n"
    export.export(store, run_id, "python", out=mine, force=True)
    assert "def build_model" in mine.read_text(encoding="utf-8")


def test_a_savedmodel_export_never_empties_a_directory_of_other_files(runs, tmp_path):
    store, records = runs
    run_id = records["export-bilstm"].id
    home = tmp_path / "home"
    (home / "documents").mkdir(parents=True)
    (home / "documents" / "thesis.tex").write_text("years of work", encoding="utf-8")
    for force in (False, True):
        with pytest.raises(export.ExportError, match=r"holds other files .* never replaces it"):
            export.export(store, run_id, "savedmodel", out=home, force=force)
    assert (home / "documents" / "thesis.tex").read_text(encoding="utf-8") == "years of work"
    target = tmp_path / "served"
    export.export(store, run_id, "savedmodel", out=target)
    assert (target / "saved_model.pb").is_file()
    with pytest.raises(export.ExportError, match="holds a SavedModel; pass force"):
        export.export(store, run_id, "savedmodel", out=target)
    assert export.export(store, run_id, "savedmodel", out=target, force=True) == target
    assert (target / "saved_model.pb").is_file()


def test_a_damaged_model_file_is_one_clear_error_exit_2(tmp_path, capsys):
    from builder_ui import cli

    store = RunStore(tmp_path)
    record = engine.run({**BILSTM, "name": "damaged"}, store=store)
    store.artifact_path(record.id, "model.keras").write_bytes(b"not a zip archive")
    with pytest.raises(export.ExportError, match=r"model file .* cannot be loaded"):
        export.export(store, record.id, "python")
    store.close()
    argv = ["export", record.id, "--format", "savedmodel", "--runs", str(tmp_path)]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "cannot be loaded" in line and "Traceback" not in line
