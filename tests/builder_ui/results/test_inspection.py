"""Inspect (`builder_ui.results.inspection`) on a real trained run, against what export writes.

One tiny toy-translation run is trained through the engine; its model is loaded back
from the run store and its task made again from its seeded spec, as the Inspect tab does.
"""

from __future__ import annotations

import keras
import pytest

from builder_ui import engine
from builder_ui.builders import load_spec, load_task
from builder_ui.engine.store import RunStore
from builder_ui.results import export, inspection

pytestmark = pytest.mark.slow

# Validation examples whose translations are compared (the split has 20).
EXAMPLES = range(12)


def _tiny_translator_spec() -> dict:
    """200 pairs of 4–6 words, a GRU of 8 units, one epoch: it has not learned to stop."""
    return {
        "version": 2,
        "name": "inspect-translator",
        "task": {"type": "toy_translation", "n": 200, "min_len": 4, "max_len": 6},
        "model": {
            "type": "seq2seq",
            "architecture": {"type": "rnn", "cell": "gru", "units": 8, "embedding_dim": 8},
        },
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 3},
    }


@pytest.fixture(scope="module")
def translator_run(tmp_path_factory):
    """A finished tiny translator: its store, record, model and task as Inspect loads them."""
    store = RunStore(tmp_path_factory.mktemp("runs"))
    record = engine.run(_tiny_translator_spec(), store=store)
    assert record.status == "done", record.error
    model = export.load_trained_model(store, record.id)
    task = load_task(load_spec(record.spec))  # seeded: the data the run saw
    yield store, record, model, task
    store.close()


def _translation(prediction: inspection.Prediction) -> str:
    """The `**Translation:**` line of an Inspect summary, without its label."""
    (line,) = [line for line in prediction.summary.split("\n\n") if "**Translation:**" in line]
    return line.removeprefix("**Translation:**").strip()


def test_the_translator_emits_at_most_the_targets_length_end_included(translator_run):
    # The task's targets hold the longest sentence, END and padding in `targets.length`
    # ids (the decoder is fed START, never emits it), so that many steps are enough.
    *_, model, task = translator_run
    assert inspection.translation_length(model, task) == task.targets.length
    assert inspection.translator(model, task).max_length == task.targets.length


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the SavedModel export (and its `translate` signature) needs TensorFlow",
)
def test_inspect_translates_each_example_as_the_exported_translator_does(translator_run):
    import tensorflow as tf

    store, record, model, task = translator_run
    exported = tf.saved_model.load(str(export.export(store, record.id, "savedmodel")))
    sources = [task.source_vocabulary.decode(task.x_val[i].tolist()) for i in EXAMPLES]
    served = [text.decode("utf-8") for text in exported.translate(tf.constant(sources)).numpy()]
    shown = [_translation(inspection.predict(model, task, record.spec, "", i)) for i in EXAMPLES]
    assert shown == served
