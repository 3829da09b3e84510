"""A finished run keeps its vocabularies (`vocabularies.json`), so that Inspect and Export read
text as the run was trained to even after its data file moved or changed; a run without
the artifact (written before it existed) makes its task again from the data file."""

from __future__ import annotations

import json
import os
import shutil

import keras
import pytest

from builder_ui import builders, engine
from builder_ui.app import actions
from builder_ui.engine import artifacts
from builder_ui.engine.artifacts import VOCABULARIES_FILE
from builder_ui.engine.store import RunStore
from builder_ui.results import export

pytestmark = pytest.mark.large

NOUNS = {"cat": "chat", "dog": "chien", "bird": "oiseau", "horse": "cheval"}
ADJECTIVES = {"black": "noir", "small": "petit", "old": "vieux"}
VERBS = {"sleeps": "dort", "runs": "court", "eats": "mange"}


def _pairs() -> list[str]:
    """Lines `english<TAB>french` of a tiny grammar: 36 pairs."""
    return [
        f"The {adjective} {noun} {verb}.\tLe {NOUNS[noun]} {ADJECTIVES[adjective]} {VERBS[verb]}."
        for noun in NOUNS
        for adjective in ADJECTIVES
        for verb in VERBS
    ]


def _translation_spec(path) -> dict:
    return {
        "version": 1,
        "name": "pairs",
        "task": {"type": "parallel_text", "path": str(path), "validation_split": 0.25},
        "model": {
            "type": "seq2seq",
            "cell": "gru",
            "units": 8,
            "embedding_dim": 8,
            "attention": "bahdanau",
        },
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 2},
    }


def _classifier_spec(path) -> dict:
    return {
        "version": 1,
        "name": "labelled-text",
        "task": {"type": "csv_sequences", "path": str(path), "inputs": "tokens"},
        "model": {
            "type": "sequence_classifier",
            "embedding_dim": 4,
            "encoder": {"type": "rnn", "cell": "gru", "units": 4},
        },
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 2},
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Finished runs on a parallel text file, a labelled text file and a generated task."""
    data = tmp_path_factory.mktemp("data")
    pairs = data / "pairs.txt"
    pairs.write_text("\n".join(_pairs()) + "\n", encoding="utf-8")
    labelled = data / "labelled.csv"
    rows = [
        f"{'animal' if i % 2 else 'thing'},the {w} number {i}"
        for i, w in enumerate(["cat", "cup", "dog", "pen"] * 10)
    ]
    labelled.write_text("\n".join(rows) + "\n", encoding="utf-8")
    runs_dir = tmp_path_factory.mktemp("runs")
    store = RunStore(runs_dir)
    generated = {
        "version": 1,
        "name": "no-words",
        "task": {"type": "long_lag", "lag": 5, "n": 60, "num_distractors": 3},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "simple", "units": 4},
        },
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1},
    }
    ids = {}
    for key, spec in (
        ("translation", _translation_spec(pairs)),
        ("classifier", _classifier_spec(labelled)),
        ("generated", generated),
    ):
        record = engine.run(spec, store=store)
        assert record.status == "done", record.error
        ids[key] = record.id
    store.close()
    return runs_dir, data, ids


@pytest.fixture
def ctx(runs):
    """A fresh app on the runs (nothing cached), that may read the data folder."""
    runs_dir, data, _ = runs
    context = actions.AppContext(runs_dir, slots=["CPU"], data_dirs=[data])
    yield context
    context.close()


@pytest.fixture
def moved(runs):
    """Move the data files away for one test, then put them back."""
    _, data, _ = runs
    away = data.parent / f"{data.name}-moved"
    os.replace(data, away)
    yield away
    os.replace(away, data)


def _translation(prediction) -> str:
    return next(
        line for line in prediction.summary.split("\n\n") if line.startswith("**Translation:**")
    )


def test_a_finished_run_records_its_task_vocabularies(runs):
    runs_dir, _, ids = runs
    store = RunStore(runs_dir)
    try:
        for key in ("translation", "classifier"):
            record = store.get(ids[key])
            task = builders.load_task(builders.load_spec(record.spec))
            document = json.loads(
                artifacts.artifact_path(store, ids[key], VOCABULARIES_FILE).read_text()
            )
            assert document["source_vocabulary"] == task.source_vocabulary.get_config()
            target = task.target_vocabulary
            assert document["target_vocabulary"] == (target and target.get_config())
            assert document["inputs"] == task.inputs.to_dict()
            assert document["targets"] == task.targets.to_dict()
        # A task without words has nothing to record.
        assert VOCABULARIES_FILE not in store.get(ids["generated"]).artifacts
    finally:
        store.close()


def test_inspect_translates_typed_text_after_the_data_file_moved(runs, ctx):
    _, _, ids = runs
    run = ids["translation"]
    before = _translation(actions.predict(ctx, run, "The black dog sleeps."))
    ctx.close()
    runs_dir, data, _ = runs
    away = data.parent / f"{data.name}-moved"
    os.replace(data, away)
    try:
        later = actions.AppContext(runs_dir, slots=["CPU"], data_dirs=[away])
        try:
            after = _translation(actions.predict(later, run, "The black dog sleeps."))
            # A validation example cannot be shown without the data: say so, plainly.
            with pytest.raises(actions.AppError, match=r"no validation examples.*Type an input"):
                actions.predict(later, run, "", 0)
        finally:
            later.close()
    finally:
        os.replace(away, data)
    assert after == before


def test_inspect_reads_with_the_recorded_vocabularies_after_the_data_file_changed(runs, ctx):
    runs_dir, data, ids = runs
    run = ids["translation"]
    before = _translation(actions.predict(ctx, run, "The small horse eats."))
    ctx.close()
    pairs = data / "pairs.txt"
    original = pairs.read_bytes()
    # Other sentences, other words: rebuilt from this file, the vocabularies would differ.
    pairs.write_text("Hello there.\tBonjour.\nGood night, friend.\tBonne nuit, ami.\n" * 4)
    try:
        later = actions.AppContext(runs_dir, slots=["CPU"], data_dirs=[data])
        try:
            after = _translation(actions.predict(later, run, "The small horse eats."))
            assert "data file changed" in later.task(run).description
        finally:
            later.close()
    finally:
        pairs.write_bytes(original)
    assert after == before


def test_a_text_classifier_predicts_typed_text_after_its_data_file_moved(runs, ctx, moved):
    _, _, ids = runs
    prediction = actions.predict(ctx, ids["classifier"], "the dog number 3")
    assert "**Predicted class:**" in prediction.summary
    assert {row[0] for row in prediction.rows} == {"animal", "thing"}  # the recorded classes
    assert "`the dog number 3`" in prediction.summary  # read by the recorded vocabulary


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export needs TensorFlow"
)
def test_the_translator_exports_as_a_savedmodel_after_the_data_file_moved(runs, ctx, moved):
    import tensorflow as tf

    _, _, ids = runs
    exported = actions.export_run(ctx, ids["translation"], "savedmodel")
    assert exported.path.is_file()
    assert "reloaded.translate(tf.constant([" in exported.snippet  # the download says how
    savedmodel = export.export(ctx.store, ids["translation"], "savedmodel")
    reloaded = tf.saved_model.load(str(savedmodel))  # kept: its variables live while it does
    translated = reloaded.translate(tf.constant(["The old cat runs."]))
    assert translated.shape == (1,)


def test_a_run_without_the_artifact_makes_its_task_again_from_the_data_file(runs, ctx):
    runs_dir, data, ids = runs
    run = ids["translation"]
    path = artifacts.artifact_path(ctx.store, run, VOCABULARIES_FILE)
    ctx.store.set_artifact(run, VOCABULARIES_FILE, None)  # as a run from before it existed
    try:
        task = ctx.task(run)
        assert len(task.x_val) > 0  # made again from the file: its validation examples too
        example = actions.predict(ctx, run, "", 0)
        assert "**Reference:**" in example.summary
        later = actions.AppContext(runs_dir, slots=["CPU"], data_dirs=[data])
        away = data.parent / f"{data.name}-moved"
        os.replace(data, away)
        try:
            with pytest.raises(actions.AppError, match="cannot be made again"):
                later.task(run)
        finally:
            os.replace(away, data)
            later.close()
    finally:
        ctx.store.set_artifact(run, VOCABULARIES_FILE, path)


def test_a_damaged_vocabularies_file_is_named_and_nothing_is_exported(runs, ctx, tmp_path):
    _, _, ids = runs
    run = ids["translation"]
    path = artifacts.artifact_path(ctx.store, run, VOCABULARIES_FILE)
    backup = tmp_path / "backup.json"
    shutil.copyfile(path, backup)
    export_dir = path.parent / export.EXPORT_DIR
    before = sorted(p.name for p in export_dir.rglob("*")) if export_dir.exists() else []
    path.write_text('{"format": 1, "inputs": ', encoding="utf-8")
    try:
        with pytest.raises(actions.AppError, match=r"vocabularies\.json.*cannot be read"):
            ctx.task(run)
        if keras.backend.backend() == "tensorflow":
            with pytest.raises(export.ExportError, match=r"vocabularies\.json.*cannot be read"):
                export.export(ctx.store, run, "savedmodel")
    finally:
        shutil.copyfile(backup, path)
    after = sorted(p.name for p in export_dir.rglob("*")) if export_dir.exists() else []
    assert after == before
