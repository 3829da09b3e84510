"""The memory estimate: parameters counted from the spec, and the budget it is checked against.

The parameter count is an integer the builder predicts without building; each case builds
the real model afterwards and compares with Keras' own `count_params()` (exact: integers).
"""

from __future__ import annotations

import copy

import pytest

from builder_ui.builders import ModelBuilder, memory, prepare, presets
from builder_ui.specs import SpecError
from tests.allocation import allocates_little

GB = 10**9


def _preset(key: str) -> dict:
    document = presets.spec(key)
    document.pop("sweep", None)  # a sweep preset's base spec is one model
    return document


def _with(key: str, **fields) -> dict:
    """A preset with `"model.encoder.cell": "lstm"`-style fields changed."""
    document = copy.deepcopy(_preset(key))
    for path, value in fields.items():
        node = document
        *parents, last = path.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return document


VARIANTS = {
    **{preset.key: _preset(preset.key) for preset in presets.arc_presets()},
    "gru_as_simple": _with("gru", model__encoder__cell="simple"),
    "gru_as_lstm": _with("gru", model__encoder__cell="lstm"),
    "gru_as_cec_lstm": _with("gru", model__encoder__cell="cec_lstm"),
    "cec_lstm_3_layers": _with("peephole_lstm", model__encoder__num_layers=3),
    "transformer_learned": _with("transformer", model__encoder__positions="learned"),
    "seq2seq_luong_concat_2_layers": _with(
        "seq2seq_luong",
        model__num_layers=2,
        model__architecture__attention="luong_concat",
        model__architecture__attention_units=7,
    ),
    "seq2seq_luong_general": _with("seq2seq", model__architecture__attention="luong_general"),
    "seq2seq_bahdanau_gru": _with(
        "seq2seq_bahdanau", model__architecture__cell="gru", model__architecture__attention_units=5
    ),
    "translation_learned": _with(
        "transformer_translation", model__architecture__positions="learned"
    ),
    "show_attend_tell_gru_patches": _with(
        "show_attend_tell",
        model__cell="gru",
        model__encoder="patches",
        model__patch_size=8,
        model__region_positions=False,
        model__attention_units=5,
    ),
    "pointer_gru": _with("pointer_network", model__cell="gru"),
    "pointer_cec_lstm": _with("pointer_network", model__cell="cec_lstm"),
}


@pytest.mark.parametrize("key", sorted(VARIANTS))
def test_estimated_parameters_equal_the_built_models_count_params(key):
    import keras  # the built model is the independent count

    prepared = prepare(VARIANTS[key])
    estimate = memory.estimate(prepared.spec, prepared.builder, prepared.task)
    model = prepared.builder.build(prepared.spec.model, prepared.task)
    if not model.built:
        model(keras.tree.map_structure(lambda array: array[:1], prepared.x_train))
    assert estimate.parameters == model.count_params()


def test_every_preset_is_covered():
    assert {preset.key for preset in presets.arc_presets()} <= set(VARIANTS)


def _gru(units: int, **encoder) -> dict:
    return {
        "version": 2,
        "name": "wide",
        "task": {"type": "long_lag", "lag": 20, "n": 200, "encoding": "ids"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "gru", "units": units, **encoder},
            "embedding_dim": 8,
        },
        "train": {"epochs": 1, "batch_size": 32, "optimizer": "adam"},
    }


def _estimate(document: dict) -> memory.MemoryEstimate:
    prepared = prepare(document)
    return memory.estimate(prepared.spec, prepared.builder, prepared.task)


def test_the_issues_gru_needs_tens_of_gigabytes_and_units_drive_it():
    with allocates_little():
        found = _estimate(_gru(26000, bidirectional=True))
    # Two directions of 3 gate blocks over [x; h] with two biases: 2 · 3 · 26000 · (8 + 26002).
    assert found.parameters > 2 * 3 * 26000 * 26000
    assert found.parameter_bytes == found.parameters * (4 + 4 + 2 * 4)  # weight, gradient, Adam
    assert found.total_bytes > 60 * GB
    assert found.driving_field() == "model.encoder.units"


def test_a_recurrent_layer_keeps_its_gates_and_states_at_every_step():
    found = _estimate(_gru(6))
    kept = {part.name: part.activations for part in found.parts}
    steps, units = 20, 6  # lag 20: 20 token ids per sequence
    assert kept["token_embedding"] == steps * 8
    # Each step: the 3 gate blocks, the candidate state and h; then the last h is the output.
    assert kept["gru_0"] == steps * (3 * units + 2 * units) + units
    assert kept["classifier"] == 2
    assert {part.field for part in found.parts} == {"model.embedding_dim", "model.encoder.units"}


def test_a_transformer_block_keeps_its_projections_norms_and_attention_scores():
    document = _gru(6)
    d, ff, heads = 8, 12, 2
    document["model"] = {
        "type": "sequence_classifier",
        "encoder": {"type": "transformer", "embedding_dim": d, "num_heads": heads, "ff_dim": ff},
    }
    kept = {part.name: part.activations for part in _estimate(document).parts}
    t = 20
    # Q, K, V and the output projection, two norms, the feed-forward's two layers and the
    # block's output, each at every step; the scores and their softmax, heads × T × T each.
    assert kept["encoder_block_0"] == (4 + 2 + 1 + 1) * t * d + t * ff + 2 * heads * t * t


def test_the_optimizer_sets_the_state_per_weight():
    document = _gru(64)
    sizes = {}
    for optimizer in ("adam", "rmsprop", "sgd"):
        document["train"]["optimizer"] = optimizer
        sizes[optimizer] = _estimate(document).bytes_per_parameter
    assert sizes == {"adam": 16, "rmsprop": 12, "sgd": 8}


def test_a_model_over_the_budget_is_refused_naming_the_field_and_the_estimate():
    prepared = prepare(_gru(512))
    budget = memory.Budget(10**6, "a test's budget")
    with pytest.raises(SpecError) as caught:
        memory.check_budget(prepared.spec, prepared.builder, prepared.task, budget)
    [(path, message)] = caught.value.problems
    assert path == "model.encoder.units"
    assert message.startswith("512 makes this model need about ")
    assert "over the memory budget of 1.0 MB (a test's budget)" in message
    assert "KERAS_SEQ_MEMORY_BUDGET or --memory-budget" in message


def test_the_same_model_under_a_larger_budget_passes_and_gets_its_estimate():
    prepared = prepare(_gru(512))
    budget = memory.Budget(100 * GB, "a test's budget")
    found = memory.check_budget(prepared.spec, prepared.builder, prepared.task, budget)
    assert found.parameters > 3 * 512 * 512


@pytest.mark.large  # the check traces a training step through 64 GRU layers, symbolically
def test_a_deeper_stack_drives_the_estimate_through_its_units():
    # 64 layers × 8000 units: the units of every layer, not the embedding, are the size.
    with allocates_little():
        found = _estimate(_gru(8000, num_layers=64))
    assert found.total_bytes > 100 * GB
    assert found.driving_field() == "model.encoder.units"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4GB", 4 * GB), ("512MB", 512 * 10**6), ("1.5GiB", int(1.5 * 2**30)), ("2048", 2048)],
)
def test_budget_sizes_read_as_bytes(text, expected):
    assert memory.memory_budget({memory.BUDGET_ENV: text}).bytes == expected


def test_a_share_of_the_free_memory_and_none_are_budgets_too():
    free = memory.available_memory()
    assert free is not None and free > 0  # Linux's /proc/meminfo, or os.sysconf
    quarter = memory.memory_budget({memory.BUDGET_ENV: "25%"})
    # Free memory moves between the two reads; the share is of a number near it.
    assert 0.1 * free < quarter.bytes < 0.4 * free
    assert memory.memory_budget({memory.BUDGET_ENV: "none"}).bytes is None
    assert "half of the" in memory.memory_budget({}).source


def test_an_unreadable_budget_is_refused_naming_the_variable_and_the_value():
    with pytest.raises(memory.BudgetError) as caught:
        memory.memory_budget({memory.BUDGET_ENV: "lots"})
    [(path, message)] = caught.value.problems
    assert path == "KERAS_SEQ_MEMORY_BUDGET"
    assert "got 'lots'" in message


def test_a_builder_without_an_estimate_is_not_refused():
    prepared = prepare(_gru(16))

    class Unknown(ModelBuilder):
        """A plugin that does not implement `estimate` (the base class's None)."""

    tiny = memory.Budget(1, "one byte")
    assert memory.check_budget(prepared.spec, Unknown(), prepared.task, tiny) is None
