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

pytestmark = pytest.mark.large

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
    """The export decodes by beam search (`Beam()`, its default): Inspect, asked for the same
    beam, shows what the SavedModel serves."""
    import tensorflow as tf

    from keras_seq.models import Beam

    store, record, model, task = translator_run
    exported = tf.saved_model.load(str(export.export(store, record.id, "savedmodel")))
    sources = [task.source_vocabulary.decode(task.x_val[i].tolist()) for i in EXAMPLES]
    served = [text.decode("utf-8") for text in exported.translate(tf.constant(sources)).numpy()]
    beam = Beam()
    decoding = inspection.Decoding(
        "beam", beam_width=beam.width, length_penalty=beam.length_penalty
    )
    shown = [
        _translation(inspection.predict(model, task, record.spec, "", i, decoding))
        for i in EXAMPLES
    ]
    assert shown == served


def test_beam_search_of_width_one_shows_the_greedy_translation(translator_run):
    *_, record, model, task = translator_run
    for i in EXAMPLES:
        greedy = inspection.predict(model, task, record.spec, "", i)
        beam = inspection.predict(
            model, task, record.spec, "", i, inspection.Decoding("beam", beam_width=1)
        )
        assert _translation(beam) == _translation(greedy)
    assert "**Decoding:** greedy" in greedy.summary
    assert "**Decoding:** beam search, width 1, α = 0.6" in beam.summary


def test_a_wider_beam_shows_what_the_translator_finds_with_that_beam(translator_run):
    *_, record, model, task = translator_run
    decoding = inspection.Decoding("beam", beam_width=4, length_penalty=0.0)
    translator = inspection.translator(model, task)
    for i in EXAMPLES:
        source = task.source_vocabulary.decode(task.x_val[i].tolist())
        shown = _translation(inspection.predict(model, task, record.spec, "", i, decoding))
        assert shown == translator.translate(source, beam_width=4, length_penalty=0.0)


def test_sampling_repeats_with_its_seed_and_top_k_one_is_greedy(translator_run):
    *_, record, model, task = translator_run
    flat = inspection.Decoding("sample", temperature=3.0, seed=5)
    first = [
        _translation(inspection.predict(model, task, record.spec, "", i, flat)) for i in EXAMPLES
    ]
    again = [
        _translation(inspection.predict(model, task, record.spec, "", i, flat)) for i in EXAMPLES
    ]
    assert first == again
    greedy = [_translation(inspection.predict(model, task, record.spec, "", i)) for i in EXAMPLES]
    # A one-epoch model at T = 3 is close to uniform over its words: twelve samples all
    # equal to the greedy output would mean the sampler never ran.
    assert first != greedy
    one = inspection.Decoding("sample", temperature=3.0, top_k=1, seed=5)
    shown = [
        _translation(inspection.predict(model, task, record.spec, "", i, one)) for i in EXAMPLES
    ]
    assert shown == greedy
    summary = inspection.predict(model, task, record.spec, "", 0, one).summary
    assert "**Decoding:** sampled (T = 3, top-k 1, seed 5)" in summary


@pytest.mark.parametrize(
    ("decoding", "message"),
    [
        (inspection.Decoding("nucleus"), "Decoding: method: expected one of greedy, beam, sample"),
        (inspection.Decoding("beam", beam_width=0), "Decoding: beam_width: expected a whole"),
        (inspection.Decoding("beam", beam_width=10**6), "Decoding: beam_width: expected a whole"),
        (inspection.Decoding("sample", top_p=1.5), "Decoding: top_p: expected a number"),
        (inspection.Decoding("sample", temperature=0.0), "Decoding: temperature: expected"),
        (inspection.Decoding("sample", seed=None), "Decoding: seed: expected a whole number"),
        (inspection.Decoding("sample", top_k=2.5), "Decoding: top_k: expected a whole number"),
        (
            inspection.Decoding("beam", coverage_penalty=0.2),
            "Decoding: coverage_penalty: expected 0 for a model without attention",
        ),
    ],
)
def test_a_decoding_field_out_of_range_is_named(translator_run, decoding, message):
    *_, record, model, task = translator_run  # a GRU seq2seq without attention
    with pytest.raises(inspection.InspectError, match=message):
        inspection.predict(model, task, record.spec, "", 0, decoding)
