"""The `seq2seq` model type: fields per architecture, compatibility, one epoch, BLEU evaluation."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest

from builder_ui.builders import expand, load_spec, prepare
from builder_ui.builders.seq2seq import TransformerArchitecture
from builder_ui.specs import SpecError
from keras_seq.models import TransformerSeq2Seq


def spec(task=None, **model):
    return {
        "version": 2,
        "name": "s2s",
        "task": task or {"type": "reverse", "length": 5, "n": 120, "vocab_size": 4},
        "model": {"type": "seq2seq", **model},
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1},
    }


RNN_ARCHITECTURE = {"type": "rnn", "cell": "gru", "units": 8, "embedding_dim": 4}
RNN = {"architecture": RNN_ARCHITECTURE}
TRANSFORMER = {"type": "transformer", "embedding_dim": 8, "num_heads": 2, "ff_dim": 16}


@pytest.fixture(scope="module")
def trained():
    architecture = {**RNN_ARCHITECTURE, "attention": "bahdanau", "bidirectional": True}
    prepared = prepare(spec(architecture=architecture))
    model = prepared.build()
    history = model.fit(
        prepared.x_train,
        prepared.y_train,
        validation_data=(prepared.x_val, prepared.y_val),
        epochs=1,
        verbose=0,
    )
    return prepared, model, history.history


@pytest.mark.large
def test_seq2seq_trains_on_teacher_forced_pairs_and_monitors_token_accuracy(trained):
    prepared, model, history = trained
    assert set(prepared.x_train) == {"source", "target"}
    np.testing.assert_array_equal(prepared.x_train["target"], prepared.y_train)
    assert prepared.monitor_metric == "val_token_accuracy"
    assert math.isfinite(history["val_loss"][0])
    assert model.attention == "bahdanau" and model.units == 8
    assert isinstance(model.encoder.get_layer("encoder_0"), keras.layers.Bidirectional)


@pytest.mark.large
def test_seq2seq_evaluation_scores_greedy_decodes_with_bleu(trained):
    from keras_seq.metrics import corpus_bleu, exact_match
    from keras_seq.models.decoding import greedy_decode

    prepared, model, _ = trained
    metrics = prepared.evaluate(model)
    task = prepared.task
    ids = np.asarray(greedy_decode(model, task.x_val, task.targets.length).ids)
    vocabulary = task.target_vocabulary
    hypotheses = [vocabulary.decode(row) for row in ids]
    references = [vocabulary.decode(row) for row in task.y_val]
    assert metrics["bleu"] == pytest.approx(corpus_bleu(hypotheses, references))
    assert metrics["exact_match"] == pytest.approx(exact_match(hypotheses, references))
    assert {"loss", "token_accuracy"} <= set(metrics)


def test_transformer_fields_reach_the_model():
    prepared = prepare(spec(architecture={**TRANSFORMER, "max_length": 8}))
    model = prepared.build()  # the graph's model: its own encoder, the Transformer's decoder
    assert isinstance(model, TransformerSeq2Seq)
    assert (model.embedding_dim, model.num_heads, model.max_length) == (8, 2, 8)


def test_defaults_fill_the_architectures_fields():
    rnn = load_spec(spec()).model.arguments()
    assert (rnn["cell"], rnn["units"], rnn["attention"], rnn["embedding_dim"]) == (
        "lstm",
        64,
        None,
        64,
    )
    assert "num_heads" not in rnn and rnn["architecture"] == "rnn"
    transformer = load_spec(spec(architecture="transformer")).model.arguments()
    assert (transformer["embedding_dim"], transformer["num_heads"], transformer["ff_dim"]) == (
        64,
        4,
        128,
    )
    assert "cell" not in transformer and transformer["architecture"] == "transformer"


def test_the_architecture_given_by_its_type_alone_switches_with_its_defaults():
    # What `--set model.architecture=transformer` does to an RNN spec: the whole section goes.
    rnn = load_spec(spec(**RNN))
    switched = {**rnn.to_dict(), "model": {**rnn.to_dict()["model"], "architecture": "transformer"}}
    model = load_spec(switched).model
    assert model.architecture.type == "transformer"
    assert model.architecture.embedding_dim == 64  # the Transformer's default, not the RNN's 4


def test_a_sweep_over_the_architecture_needs_no_nulled_fields():
    document = {
        **spec(**RNN),
        "sweep": {"parameters": {"model.architecture": ["rnn", TRANSFORMER]}},
    }
    trials = expand(load_spec(document))
    assert [t.model.architecture.type for t in trials] == ["rnn", "transformer"]
    assert trials[1].model.architecture.num_heads == 2


def test_a_version_1_document_is_upgraded_to_the_architecture_section():
    # Version 1 put both architectures' fields beside `architecture`, null for "default".
    version_1 = {
        **spec(),
        "version": 1,
        "model": {
            "type": "seq2seq",
            "architecture": "transformer",
            "embed_dim": 8,
            "num_heads": 2,
            "cell": None,
            "units": None,
            "num_layers": 2,
        },
        "sweep": {"parameters": {"model.ff_dim": [16, 32]}},
    }
    upgraded = load_spec(version_1)
    assert upgraded.version == 2
    assert upgraded.model.architecture.model_dump() == {
        **TransformerArchitecture(embedding_dim=8, num_heads=2).model_dump(),
    }
    assert upgraded.model.num_layers == 2
    assert upgraded.sweep.parameters == {"model.architecture.ff_dim": [16, 32]}


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            {"architecture": {"type": "transformer", "cell": "gru"}},
            "model.architecture.cell: unknown field; allowed fields: embedding_dim, ff_dim, "
            "max_length, norm_first, num_heads, positions, type",
        ),
        (
            {"architecture": {"type": "rnn", "num_heads": 2}},
            "model.architecture.num_heads: unknown field; allowed fields: attention, "
            "attention_units, bidirectional, cell, embedding_dim, input_feeding, type, units",
        ),
        (
            {"architecture": "lstm"},
            "model.architecture: unknown type 'lstm'; expected one of 'rnn', 'transformer'",
        ),
        (
            {"architecture": {"type": "rnn", "units": 15, "bidirectional": True}},
            "model.architecture.units: expected an even number with bidirectional: true (each "
            "direction has units / 2), got 15",
        ),
        (
            {"architecture": {"attention": "luong_dot", "attention_units": 8, "type": "rnn"}},
            "model.architecture.attention_units: only with attention 'bahdanau' or "
            "'luong_concat', got attention 'luong_dot'",
        ),
        (
            {"architecture": {"type": "rnn", "attention": "bahdanau", "input_feeding": True}},
            "model.architecture.input_feeding: only with a Luong attention (luong_dot, "
            "luong_general, luong_concat), got attention 'bahdanau'",
        ),
        (
            {"architecture": {"type": "rnn", "attention": "dot"}},
            "model.architecture.attention: expected one of 'bahdanau', 'luong_dot', "
            "'luong_general' or 'luong_concat', got 'dot'",
        ),
        (
            {"architecture": {"type": "transformer", "embedding_dim": 10, "num_heads": 4}},
            "model.architecture.num_heads: expected a divisor of embedding_dim=10 (each head "
            "gets embedding_dim / num_heads features), got 4",
        ),
    ],
)
def test_fields_are_checked_per_architecture(model, expected):
    with pytest.raises(SpecError) as excinfo:
        load_spec(spec(**model))
    assert str(excinfo.value) == expected


def test_transformer_max_length_must_hold_the_task_targets():
    with pytest.raises(SpecError) as excinfo:
        prepare(spec(architecture={**TRANSFORMER, "max_length": 4}))
    assert str(excinfo.value) == (
        "model.architecture.max_length: expected at least 6 (the longest target of task "
        "'reverse'), got 4"
    )


def test_seq2seq_needs_a_sequence_task_and_sequence_tasks_need_seq2seq():
    with pytest.raises(SpecError, match="'seq2seq' predicts sequence targets, but task"):
        prepare(spec(task={"type": "long_lag", "n": 50, "encoding": "ids"}))
    reverse = {"type": "reverse", "length": 5, "n": 50}
    data = {**spec(task=reverse), "model": {"type": "sequence_classifier"}}
    with pytest.raises(SpecError) as excinfo:
        prepare(data)
    assert str(excinfo.value) == (
        "model.type: 'sequence_classifier' predicts classification targets, but task 'reverse' "
        "has sequence targets; model types that fit: graph, seq2seq"
    )


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ({"type": "copy", "length": 3, "min_length": 4}, "task.min_length: expected at most"),
        ({"type": "toy_translation", "min_len": 9, "max_len": 6}, "task.min_len: expected at"),
        ({"type": "toy_translation", "max_len": 300}, "task.max_len: expected an integer ≤ 200"),
    ],
)
def test_sequence_task_fields_are_checked(task, expected):
    with pytest.raises(SpecError, match=f"^{expected}"):
        load_spec(spec(task=task))


def test_parallel_text_problems_are_reported_at_task_path(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("hello\tbonjour\nno tab here\ncat\tchat\n", encoding="utf-8")
    with pytest.raises(SpecError) as excinfo:
        prepare(spec(task={"type": "parallel_text", "path": str(path)}))
    (line,) = str(excinfo.value).splitlines()[:1]
    assert line.startswith("task.path: ") and "2" in line


def test_parallel_text_file_becomes_a_translation_task(tmp_path):
    path = tmp_path / "pairs.tsv"
    words = ["cat", "dog", "bird", "fish", "cow", "horse", "sheep", "goat", "duck", "mouse"]
    french = ["chat", "chien", "oiseau", "poisson", "vache", "cheval", "mouton", "chèvre",
              "canard", "souris"]  # fmt: skip
    lines = [f"the {a} sees the {b}\tle {x} voit le {y}" for a, x in zip(words, french, strict=True)
             for b, y in zip(words[:3], french[:3], strict=True)]  # fmt: skip
    path.write_text("\n".join(lines), encoding="utf-8")
    prepared = prepare(spec(task={"type": "parallel_text", "path": str(path)}, **RNN))
    assert prepared.task.targets.kind == "sequence"
    assert prepared.num_train + prepared.num_val == len(lines)
