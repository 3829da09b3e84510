"""Experiment specs: validation messages, YAML/JSON round trips, versions, the JSON Schema.

No Keras model is built here: validating a spec must not need one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from builder_ui.builders import json_schema, load_spec
from builder_ui.builders.sequence import RNNEncoder, SequenceClassifierParams
from builder_ui.builders.tasks import LongLagParams
from builder_ui.specs import SPEC_VERSION, UPGRADES, ExperimentSpec, SpecError, TrainSpec, dump_spec

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "specs"

BASE = {
    "version": 1,
    "name": "base",
    "task": {"type": "long_lag", "lag": 10, "n": 100},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 8}},
    "train": {"epochs": 2, "learning_rate": 0.01},
}


def with_changes(**sections):
    """BASE with some sections' fields replaced (`model={"encoder": {...}}` merges one level)."""
    data = copy.deepcopy(BASE)
    for section, fields in sections.items():
        if isinstance(fields, dict) and isinstance(data.get(section), dict):
            data[section] = {**data[section], **fields}
        else:
            data[section] = fields
    return data


def problems(data) -> list[str]:
    with pytest.raises(SpecError) as excinfo:
        load_spec(data)
    return str(excinfo.value).splitlines()


def test_valid_spec_resolves_registered_types_and_fills_defaults():
    spec = load_spec(BASE)
    assert isinstance(spec, ExperimentSpec)
    assert isinstance(spec.task, LongLagParams)
    assert spec.task.encoding == "one_hot" and spec.task.num_distractors == 8
    assert isinstance(spec.model, SequenceClassifierParams)
    assert isinstance(spec.model.encoder, RNNEncoder)
    assert spec.model.encoder.cell == "lstm" and spec.model.encoder.units == 8
    assert spec.train == TrainSpec(epochs=2, learning_rate=0.01)
    assert spec.train.optimizer == "adam" and spec.train.mixed_precision == "auto"
    assert spec.sweep is None


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"model": {"encoder": {"type": "rnn", "units": -3}}},
            "model.encoder.units: expected an integer ≥ 1, got -3",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "units": True}}},
            "model.encoder.units: expected an integer, got true",
        ),
        (
            {"train": {"optimizer": "adagrad"}},
            "train.optimizer: expected one of 'adam', 'sgd', 'rmsprop' or 'adamw', got 'adagrad'",
        ),
        (
            {"train": {"learning_rate": 0}},
            "train.learning_rate: expected a number > 0, got 0",
        ),
        (
            {"train": {"learning_rate": float("nan")}},
            "train.learning_rate: expected a finite number, got nan",
        ),
        ({"task": {"lag": "ten"}}, "task.lag: expected an integer, got 'ten'"),
        (
            {"task": {"validation_split": 1.5}},
            "task.validation_split: expected a number < 1, got 1.5",
        ),
        (
            {"task": {"type": "no_such_task"}},
            "task.type: unknown task type 'no_such_task'; expected one of 'adding_problem', "
            "'copy', 'csv_sequences', 'digits', 'long_lag'",
        ),
        (
            {"model": {"type": "rnn_classifier"}},
            "model.type: unknown model type 'rnn_classifier'; expected one of",
        ),
        (
            {"model": {"encoder": {"type": "cnn"}}},
            "model.encoder: unknown type 'cnn'; expected one of 'rnn', 'transformer'",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "unitz": 8}}},
            "model.encoder.unitz: unknown field; allowed fields: bidirectional, cell, "
            "cell_activation, dropout, forget_gate, forget_gate_bias, gate_activation, "
            "input_gate_bias, num_layers, output_activation, output_gate_bias, peephole, "
            "truncated_gradients, type, units",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "cell": "gru", "forget_gate": True}}},
            "model.encoder.forget_gate: only for cell 'cec_lstm'",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "cell": "lstm", "truncated_gradients": True}}},
            "model.encoder.truncated_gradients: only for cell 'cec_lstm'",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "cell": "cec_lstm", "forget_gate_bias": 2.0}}},
            "model.encoder.forget_gate_bias: the cell has no forget gate",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "cell": "cec_lstm", "input_gate_bias": 50}}},
            "model.encoder.input_gate_bias: expected a number ≤ 20, got 50",
        ),
        (
            {"model": {"encoder": {"type": "rnn", "cell": "cec_lstm", "cell_activation": "cos"}}},
            "model.encoder.cell_activation: expected one of",
        ),
        (
            {"model": {"encoder": {"type": "transformer", "embed_dim": 30, "num_heads": 4}}},
            "model.encoder.num_heads: expected a divisor of embedding_dim=30 (each head gets "
            "embedding_dim / num_heads features), got 4",
        ),
        (
            {"model": {"embedding_dim": 8, "encoder": {"type": "transformer"}}},
            "model.embedding_dim: only for the rnn encoder",
        ),
        ({"name": "has spaces"}, "name: expected a string matching"),
        ({"task": {"type": None}}, "task.type: expected a string, got null"),
        (
            {"sweep": {"method": "random", "parameters": {"train.seed": [0, 1]}}},
            "sweep.num_trials: required when method is 'random'",
        ),
        (
            {"train": {"early_stopping": {"patience": -1}}},
            "train.early_stopping.patience: expected an integer ≥ 0, got -1",
        ),
        ({"extra": 1}, "extra: unknown field; allowed fields: model, name, sweep, task, train"),
    ],
)
def test_error_names_the_field_path_the_value_and_what_is_allowed(changes, expected):
    lines = problems(with_changes(**changes))
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected), lines[0]


def test_missing_type_lists_the_registered_types():
    data = with_changes()
    del data["model"]["type"]
    (line,) = problems(data)
    assert line.startswith("model.type: missing; expected one of ")
    assert "'pointer_network'" in line and "'sequence_classifier'" in line


def test_every_problem_is_reported_one_per_line_in_document_order():
    data = with_changes(
        train={"epochs": 0},
        task={"lag": -1, "colour": "red"},
        model={"encoder": {"type": "rnn", "units": 0}},
    )
    with pytest.raises(SpecError) as excinfo:
        load_spec(data)
    paths = [path for path, _ in excinfo.value.problems]
    assert paths == ["task.lag", "task.colour", "model.encoder.units", "train.epochs"]
    assert len(str(excinfo.value).splitlines()) == 4


def test_spec_error_is_a_value_error():
    assert issubclass(SpecError, ValueError)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_dump_and_load_round_trip_to_an_equal_spec(fmt):
    spec = load_spec(
        with_changes(
            model={"encoder": {"type": "transformer", "embed_dim": 16, "num_heads": 2}},
            train={"clipnorm": 0.5, "early_stopping": {"patience": 2}, "optimizer": "adamw"},
            sweep={"parameters": {"train.learning_rate": [0.001, 0.01]}},
        )
    )
    text = dump_spec(spec, fmt)
    again = load_spec(text)
    assert again == spec
    assert dump_spec(again, fmt) == text
    parsed = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert parsed["model"]["encoder"]["num_heads"] == 2
    assert parsed["version"] == SPEC_VERSION


def test_dump_refuses_an_unknown_format():
    with pytest.raises(ValueError, match="`format`, expected 'yaml' or 'json', got 'toml'"):
        dump_spec(load_spec(BASE), "toml")


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json"])
def test_load_from_a_file_path_string_or_path(tmp_path, suffix):
    path = tmp_path / f"spec{suffix}"
    path.write_text(json.dumps(BASE) if suffix == ".json" else yaml.safe_dump(BASE))
    assert load_spec(path) == load_spec(str(path)) == load_spec(BASE)


def test_malformed_yaml_is_reported_with_its_line():
    text = "version: 1\nname: x\ntask: {type: long_lag\nmodel: {type: sequence_classifier}\n"
    lines = problems(text)
    assert len(lines) == 1
    assert lines[0].startswith("malformed YAML at line 4")


def test_malformed_yaml_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nname: x\n  indented: wrong\n")
    (line,) = problems(path)
    assert line.startswith(f"{path}: malformed YAML at line 3")


def test_malformed_json_file_names_the_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "version": 1,\n  "name": "x",\n}\n')
    (line,) = problems(path)
    assert line.startswith(f"{path}: malformed JSON at line 4")


def test_duplicate_yaml_keys_are_refused_with_both_lines():
    (line,) = problems("version: 1\nname: a\nname: b\ntask: {}\nmodel: {}\n")
    assert "duplicate key 'name' (first on line 2)" in line
    assert "line 3" in line


def test_non_utf8_file_is_refused_with_the_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("version: 1\nname: caf\xe9\n".encode("latin-1"))
    (line,) = problems(path)
    assert line.startswith(f"{path}: not UTF-8 text (line 2: ")


def test_missing_file_and_wrong_suffix_are_refused(tmp_path):
    assert problems(tmp_path / "absent.yaml") == [f"{tmp_path / 'absent.yaml'}: no such spec file"]
    other = tmp_path / "spec.txt"
    other.write_text("version: 1")
    (line,) = problems(other)
    assert "expected a file ending in .yaml, .yml, .json" in line


def test_yaml_exponent_without_a_dot_reads_as_a_number():
    spec = load_spec(
        "version: 1\nname: x\ntask: {type: long_lag}\nmodel: {type: sequence_classifier}\n"
        "train: {learning_rate: 3e-4}\n"
    )
    assert spec.train.learning_rate == pytest.approx(3e-4)


def test_a_document_that_is_not_a_mapping_is_refused():
    (line,) = problems("- just\n- a list\n")
    assert line.startswith("expected a mapping of spec fields")


def test_spec_without_version_is_refused_with_the_current_version():
    data = {key: value for key, value in BASE.items() if key != "version"}
    assert problems(data) == ["version: missing; add `version: 2` (the current spec version)"]


def test_newer_version_is_refused():
    (line,) = problems(with_changes(version=SPEC_VERSION + 1))
    assert line == (
        f"version: version {SPEC_VERSION + 1} is newer than this keras_seq understands "
        f"(up to {SPEC_VERSION}); upgrade keras_seq to read it"
    )


def test_version_0_is_upgraded_renaming_train_lr():
    assert 0 in UPGRADES
    data = with_changes(version=0, train={"lr": 0.05, "epochs": 3})
    del data["train"]["learning_rate"]
    spec = load_spec(data)
    assert spec.version == SPEC_VERSION
    assert spec.train.learning_rate == 0.05 and spec.train.epochs == 3
    assert "lr" not in dump_spec(spec)


def test_version_0_with_both_names_is_refused():
    data = with_changes(version=0, train={"lr": 0.05, "learning_rate": 0.01})
    assert problems(data) == [
        "train.lr: version 0 field renamed to train.learning_rate; give only one"
    ]


def test_unsupported_old_version_is_refused():
    (line,) = problems(with_changes(version=-1))
    assert line.startswith("version: version -1 is no longer supported")


def test_specs_pickle_for_other_processes():
    import pickle

    spec = load_spec(with_changes(sweep={"parameters": {"train.seed": [0, 1]}}))
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_specs_are_immutable():
    spec = load_spec(BASE)
    with pytest.raises(ValueError, match="frozen"):
        spec.name = "other"


def test_model_validate_on_a_dict_points_to_load_spec():
    # The spec language knows no component types: a raw mapping is refused, naming the way in.
    with pytest.raises(ValueError, match=r"task: .*builder_ui\.builders\.load_spec"):
        ExperimentSpec.model_validate(BASE)
    spec = load_spec(BASE)
    assert isinstance(spec.model, SequenceClassifierParams)
    validated = {**spec.model_dump(), "task": spec.task, "model": spec.model}
    assert ExperimentSpec.model_validate(validated) == spec


@pytest.fixture(scope="module")
def schema():
    document = json_schema()
    jsonschema.Draft202012Validator.check_schema(document)
    return document


def test_schema_lists_every_registered_model_and_task_type(schema):
    from builder_ui.builders import model_types, task_types

    models = schema["properties"]["model"]["discriminator"]["mapping"]
    tasks = schema["properties"]["task"]["discriminator"]["mapping"]
    assert sorted(models) == model_types()
    assert sorted(tasks) == task_types()
    assert {"sequence_classifier", "vision_transformer", "pointer_network"} <= set(models)


def test_schema_accepts_dumped_specs_and_rejects_invalid_ones(schema):
    validator = jsonschema.Draft202012Validator(schema)
    spec = load_spec(with_changes(sweep={"parameters": {"train.seed": [0, 1]}}))
    validator.validate(json.loads(dump_spec(spec, "json")))
    bad = with_changes(model={"encoder": {"type": "rnn", "units": -3}})
    errors = list(validator.iter_errors(bad))
    assert errors
    unknown = with_changes(model={"type": "no_such_model"})
    assert list(validator.iter_errors(unknown))


def example_specs() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


STAGES = (
    "vanilla_rnn",
    "lstm_1997",
    "lstm_forget_gate",
    "peephole_lstm",
    "gru",
    "seq2seq",
    "seq2seq_bahdanau",
    "seq2seq_luong",
    "transformer",
    "vit",
    "pointer_network",
)


def test_there_is_an_example_spec_for_every_stage_of_the_arc():
    names = {path.stem for path in example_specs()}
    assert set(STAGES) <= names


@pytest.mark.parametrize("path", example_specs(), ids=lambda p: p.stem)
def test_example_spec_loads_validates_and_matches_the_schema(path, schema):
    from builder_ui.builders import check_kinds

    spec = load_spec(path)
    check_kinds(spec)
    raw = yaml.safe_load(path.read_text())
    jsonschema.Draft202012Validator(schema).validate(raw)
    assert spec.train.epochs <= 20


def test_task_limits_mirror_keras_seq():
    from builder_ui.builders import tasks as task_specs
    from keras_seq.tasks import base

    assert task_specs.MAX_LENGTH == base.MAX_LENGTH
    assert task_specs.MAX_ELEMENTS == base.MAX_ELEMENTS
