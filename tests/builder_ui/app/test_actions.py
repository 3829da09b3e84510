"""The app's actions (`builder_ui.app.actions`), called as the tabs call them, without a browser.

Spec editing, presets and uploads need no training; the Train, Compare,
Inspect and Export actions are checked on tiny runs trained once per module
through the real queue and engine.
"""

from __future__ import annotations

import copy
import csv
import math
import os
import re
import zipfile
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
import yaml

from builder_ui import builders
from builder_ui.app import actions, forms, uploads
from builder_ui.app.actions import compare as compare_actions
from builder_ui.builders import load_spec, presets
from builder_ui.engine import artifacts
from builder_ui.specs import ModelParams, SpecError, StrictModel
from builder_ui.specs.documents import MAX_SPEC_NODES
from tests.allocation import allocates_little
from tests.builder_ui.engine.quick_runner import QuickRunner
from tests.builder_ui.specs.test_documents import billion_laughs

ROOT = Path(__file__).resolve().parents[3]
WAIT_S = 300


def text_of(document: dict) -> str:
    return actions.dump(document)


def tiny_classifier(name: str = "tiny-rnn", epochs: int = 2) -> dict:
    """96 training and 24 validation sequences of 5 one-hot steps over 5 symbols."""
    return {
        "version": 1,
        "name": name,
        "task": {"type": "long_lag", "lag": 5, "n": 120, "num_distractors": 3},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "simple", "units": 4},
        },
        "train": {"epochs": epochs, "batch_size": 32, "learning_rate": 0.01, "seed": 1},
    }


# ---------------------------------------------------------------------------
# Presets


def test_every_preset_is_a_valid_spec_whose_model_fits_its_task():
    keys = [preset.key for preset in presets.arc_presets()]
    assert keys[:5] == ["vanilla_rnn", "lstm_1997", "lstm_forget_gate", "peephole_lstm", "gru"]
    assert {"seq2seq", "seq2seq_bahdanau", "seq2seq_luong", "transformer", "vit"} <= set(keys)
    assert keys[-2:] == ["pointer_network", "graph_attention_classifier"]
    for key, _ in [(p.key, p) for p in presets.arc_presets()]:
        result = actions.check(actions.preset_text(key))
        assert result.ok, (key, result.problems)
    attention = {
        key: presets.spec(key)["model"]["architecture"].get("attention")
        for key in ("seq2seq", "seq2seq_bahdanau", "seq2seq_luong")
    }
    assert attention == {
        "seq2seq": None,
        "seq2seq_bahdanau": "bahdanau",
        "seq2seq_luong": "luong_general",
    }


def test_presets_are_the_example_specs():
    # One set of files: the packaged presets, which examples/specs links to.
    for preset in presets.arc_presets():
        example = ROOT / "examples" / "specs" / f"{preset.key}.yaml"
        assert example.is_file(), preset.key
        assert load_spec(preset.spec).to_dict() == load_spec(example).to_dict(), preset.key
        assert example.resolve() == Path(str(presets.SPECS_DIR / f"{preset.key}.yaml")).resolve()


class PluginParams(ModelParams):
    """A plugin's model.

    Args:
        width: Units of its one hidden layer.
    """

    type: Literal["plugin_mlp"] = "plugin_mlp"
    width: int = 7


class PluginMLP(builders.ModelBuilder):
    params = PluginParams
    input_kinds = ("numeric",)
    target_kinds = ("regression",)
    description = "A flat MLP from a plugin."

    def build(self, params, task):
        import keras

        inputs = keras.Input(task.inputs.shape)
        hidden = keras.layers.Dense(params.width)(keras.layers.Flatten()(inputs))
        return keras.Model(inputs, keras.layers.Dense(1)(hidden))


def test_a_plugin_model_type_gets_a_preset_a_form_and_a_summary():
    builders.register_model("plugin_mlp")(PluginMLP)
    try:
        preset = presets.get("plugin:plugin_mlp")
        assert preset.plugin and preset.description == "A flat MLP from a plugin."
        assert preset.spec["task"] == {"type": "adding_problem"}  # numeric in, regression out
        text = actions.preset_text(preset.key)
        assert actions.check(text).ok
        (width,) = [f for f in actions.fields(text) if f.section == "model"]
        assert (width.path, width.kind, width.value, width.help) == (
            "model.width",
            "int",
            7,
            "Units of its one hidden layer.",
        )
        summary = actions.summarize(text)
        # adding_problem: 50 steps of 2 features, flattened to 100; 100·7 + 7 and 7 + 1.
        assert summary.params == 100 * 7 + 7 + 7 + 1
    finally:
        builders.unregister("model", "plugin_mlp")
    assert "plugin:plugin_mlp" not in [p.key for p in presets.all_presets()]


# ---------------------------------------------------------------------------
# The form and the YAML


def test_the_form_lists_each_field_with_its_path_kind_bounds_and_help():
    found = {f.path: f for f in actions.fields(actions.preset_text("transformer"))}
    units = found["model.encoder.num_heads"]
    assert (units.kind, units.value, units.bounds) == ("int", 4, "≥ 1, ≤ 65536")
    assert units.help == "Attention heads; must divide `embedding_dim`."
    assert units.elem_id == "field-model-encoder-num-heads"
    encoder = found["model.encoder.type"]
    assert (encoder.kind, encoder.choices, encoder.structural) == (
        "choice",
        ("rnn", "transformer"),
        True,
    )
    assert found["train.learning_rate"].bounds == "> 0, ≤ 10"
    assert found["train.clipnorm"].optional
    assert found["train.early_stopping"].kind == "toggle"
    assert found["task.encoding"].choices == ("one_hot", "ids")
    assert "model.type" not in found and "task.type" not in found  # chosen above the form
    assert "sweep" not in {f.section for f in found.values()}


def test_a_form_edit_rewrites_the_yaml_and_an_out_of_range_value_is_named_by_its_path():
    text = actions.preset_text("vanilla_rnn")
    new_text, result, redraw = actions.apply_field(text, "model.encoder.units", "-3")
    assert yaml.safe_load(new_text)["model"]["encoder"]["units"] == -3
    assert not redraw
    assert result.problems == [("model.encoder.units", "expected an integer ≥ 1, got -3")]
    assert result.errors_by_field() == {"model.encoder.units": "expected an integer ≥ 1, got -3"}
    page = actions.problems_markdown(result.problems)
    assert "`model.encoder.units`" in page and "got -3" in page

    fixed, result, _ = actions.apply_field(new_text, "model.encoder.units", 12.0)
    assert yaml.safe_load(fixed)["model"]["encoder"]["units"] == 12
    assert result.ok and "Valid spec" in actions.problems_markdown(result.problems)


def test_choosing_another_block_type_starts_it_from_its_defaults():
    text = actions.preset_text("vanilla_rnn")
    new_text, result, redraw = actions.apply_field(text, "model.encoder.type", "transformer")
    assert redraw and result.ok
    assert yaml.safe_load(new_text)["model"]["encoder"] == {
        "type": "transformer",
        "embedding_dim": 32,
        "num_heads": 4,
        "ff_dim": 64,
        "num_layers": 2,
        "norm_first": False,
        "positions": "sinusoidal",
        "pooling": "mean",
        "dropout": 0.0,
    }
    on, result, redraw = actions.apply_field(new_text, "train.early_stopping", True)
    assert redraw and result.ok
    assert yaml.safe_load(on)["train"]["early_stopping"] == {"patience": 5, "min_delta": 0.0}
    assert "train.early_stopping.patience" in {f.path for f in actions.fields(on)}
    off, _, _ = actions.apply_field(on, "train.early_stopping", False)
    assert yaml.safe_load(off)["train"]["early_stopping"] is None


def test_another_model_type_that_does_not_fit_the_task_is_refused_at_model_type():
    text, result = actions.apply_type(
        actions.preset_text("vanilla_rnn"), "model", "sequence_regressor"
    )
    assert yaml.safe_load(text)["model"]["type"] == "sequence_regressor"
    (problem,) = result.problems
    assert problem[0] == "model.type"
    assert "classification targets" in problem[1] and "sequence_classifier" in problem[1]
    with pytest.raises(actions.AppError, match=r"model\.type: expected one of"):
        actions.apply_type(text, "model", "no_such_model")


def test_malformed_yaml_is_reported_with_its_line_and_the_form_waits_for_a_fix():
    broken = "version: 1\nname: x\ntask: {type: long_lag\n"
    result = actions.check(broken)
    assert result.document is None
    (problem,) = result.problems
    assert problem[0] == "" and "malformed YAML at line" in problem[1]
    assert actions.fields(broken) == []
    with pytest.raises(actions.AppError, match="fix it in the editor first"):
        actions.apply_field(broken, "train.epochs", 3)

    unknown = text_of({**tiny_classifier(), "train": {"epochs": 1, "lr": 0.1}})
    (problem,) = actions.check(unknown).problems
    assert problem[0] == "train.lr" and problem[1].startswith("unknown field; allowed fields:")
    with pytest.raises(actions.AppError, match=r"train\.nope: not a field of this spec"):
        actions.apply_field(actions.preset_text("vanilla_rnn"), "train.nope", 1)


def test_docstring_help_reads_wrapped_lists_of_names():
    class Wrapped(StrictModel):
        """A model whose docstring documents several fields in one entry.

        Args:
            cell, units, bidirectional,
                attention: RNN only; null means the default
                (`lstm`, 64, false, no attention).
            max_length: Transformer only.
        """

    help_text = forms._docstring_help(Wrapped)
    assert help_text["attention"].startswith("RNN only; null means the default")
    assert help_text["cell"] == help_text["attention"]
    assert help_text["max_length"] == "Transformer only."


def test_the_seq2seq_architecture_is_a_block_of_the_form_with_its_fields_help():
    found = {f.path: f for f in actions.fields(actions.preset_text("seq2seq"))}
    assert found["model.architecture.attention"].help.startswith("null (the fixed context")
    assert "model.architecture.num_heads" not in found  # the Transformer's, not this RNN's
    text, result, redraw = actions.apply_field(
        actions.preset_text("seq2seq"), "model.architecture.type", "transformer"
    )
    assert redraw and result.ok
    architecture = yaml.safe_load(text)["model"]["architecture"]
    assert architecture["type"] == "transformer" and architecture["num_heads"] == 4
    assert "cell" not in architecture


# ---------------------------------------------------------------------------
# Model summary


def test_the_summary_counts_parameters_as_the_rnn_equations_do():
    units = 8
    document = {
        "version": 1,
        "name": "adding",
        "task": {"type": "adding_problem", "length": 12, "n": 50},
        "model": {
            "type": "sequence_regressor",
            "encoder": {"type": "rnn", "cell": "simple", "units": units},
        },
    }
    summary = actions.summarize(text_of(document))
    features = 2  # value and marker
    rnn = units * features + units * units + units  # W_x, W_h, b
    head = units * 1 + 1
    assert summary.params == summary.trainable == rnn + head
    assert summary.rows == [
        ["sequence", "InputLayer", "(None, 12, 2)", 0, ""],
        ["simple_0", "SimpleRNN", f"(None, {units})", rnn, "sequence"],
        ["regressor", "Dense", "(None, 1)", head, "simple_0"],
    ]
    boxes = [
        summary.diagram.index(f'data-layer="{name}"')
        for name in ("sequence", "simple_0", "regressor")
    ]
    assert boxes == sorted(boxes)
    assert f"{rnn + head:,} parameters" in summary.headline


def test_the_summary_shows_the_class_token_in_the_transformer_shapes():
    summary = actions.summarize(actions.preset_text("transformer"))
    shapes = {row[0]: row[2] for row in summary.rows}
    assert shapes["token_embedding"] == "(None, 20, 32)"
    assert shapes["class_token"] == "(None, 21, 32)"
    assert shapes["classifier"] == "(None, 2)"


def test_the_summary_refuses_a_patch_size_that_does_not_divide_the_image():
    document = presets.spec("vit")
    document["model"]["patch_size"] = 3
    with pytest.raises(SpecError) as caught:
        actions.summarize(text_of(document))
    assert caught.value.problems[0][0] == "model.patch_size"
    assert "height 8 and width 8" in caught.value.problems[0][1]


def test_a_subclassed_model_is_listed_by_its_sublayers():
    document = presets.spec("seq2seq_bahdanau")
    document["task"].update(n=60, max_len=6)
    document["model"]["architecture"].update(units=8, embedding_dim=4)
    summary = actions.summarize(text_of(document))
    assert sum(row[3] for row in summary.rows) == summary.params
    # The encoder is a functional model of its own (the graph's blocks up to the decoder).
    assert {"encoder", "decoder", "output_projection"} <= {row[0] for row in summary.rows}
    assert "Subclassed model" in summary.diagram


# ---------------------------------------------------------------------------
# Uploads


def write(path: Path, content: bytes | str) -> Path:
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


@pytest.fixture
def ctx(tmp_path):
    """An app whose queue runs with a `QuickRunner` (in this process, without training)."""
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"], runner=QuickRunner())
    yield context
    context.close()


def stored(ctx: actions.AppContext) -> list[Path]:
    root = ctx.uploads_root
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_a_run_deleted_in_compare_leaves_the_queue_and_the_others_stay(ctx):
    first = actions.queue_spec(ctx, text_of(tiny_classifier("first"))).run_ids[0]
    second = actions.queue_spec(ctx, text_of(tiny_classifier("second"))).run_ids[0]
    assert ctx.jobs.wait([first, second], timeout=WAIT_S)
    assert list(actions.queue_frame(ctx)["id"]) == [second, first]  # the newest first
    compare_actions.delete_run(ctx, first, confirmed=True)
    assert list(actions.queue_frame(ctx)["id"]) == [second]


def test_a_labelled_numeric_csv_is_previewed_and_kept_for_the_runs(ctx, tmp_path):
    rows = [f"{'up' if i % 2 else 'down'},{i},{i + 1},{i + 2}" for i in range(30)]
    source = write(tmp_path / "steps.csv", "\n".join(rows) + "\n")
    result = actions.upload(ctx, source, "labelled_sequences")
    assert result.ok, result.message
    assert result.headers == ["label", "x1", "x2", "x3"]
    assert result.rows[:2] == [["down", "0", "1", "2"], ["up", "1", "2", "3"]]
    assert len(result.rows) == uploads.PREVIEW_ROWS
    assert "30 examples" in result.message and "classification" in result.message
    assert result.task["type"] == "csv_sequences"
    assert (result.task["inputs"], result.task["target"]) == ("numeric", "classification")
    assert stored(ctx) == [result.path] and result.path.read_bytes() == source.read_bytes()
    # The same content again is kept once.
    assert actions.upload(ctx, source, "labelled_sequences").path == result.path
    assert len(stored(ctx)) == 1

    text, checked = actions.apply_task(actions.preset_text("vanilla_rnn"), result.task)
    assert checked.ok, checked.problems
    assert yaml.safe_load(text)["task"]["path"] == str(result.path)


def test_text_rows_parallel_text_and_numeric_series_become_their_tasks(ctx, tmp_path):
    texts = write(
        tmp_path / "reviews.tsv",
        "".join(f"{'pos' if i % 2 else 'neg'}\tgood film {i}\n" for i in range(10)),
    )
    result = actions.upload(ctx, texts, "labelled_sequences")
    assert result.ok, result.message
    assert (result.task["inputs"], result.task["delimiter"]) == ("tokens", "\t")

    pairs = write(tmp_path / "pairs.txt", "".join(f"the cat {i}\tle chat {i}\n" for i in range(20)))
    result = actions.upload(ctx, pairs, "parallel_text")
    assert result.ok, result.message
    assert result.task == {"type": "parallel_text", "path": str(result.path)}
    assert result.headers == ["source", "target"] and result.rows[0] == ["the cat 0", "le chat 0"]

    series = write(tmp_path / "series.csv", "".join(f"{i * 0.5},{i},{i + 1}\n" for i in range(10)))
    result = actions.upload(ctx, series, "numeric_series")
    assert result.ok, result.message
    assert (result.task["inputs"], result.task["target"]) == ("numeric", "regression")
    assert result.headers[0] == "value"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("ragged.csv", "a,1,2\nb,3,4\nc,5\n", "ragged.csv, line 3: ragged row: 2 columns"),
        ("latin1.csv", b"a,1,2\nb,\xe9t\xe9,2\n", "latin1.csv, line 2: not UTF-8 text (byte 0xe9"),
        ("nan.csv", "a,1,2\nb,nan,2\n", "nan.csv, line 2: column 2: expected a finite number"),
        ("one.csv", "a,1,2\na,3,4\n", "one class only"),
        ("empty.csv", "", "empty.csv: the file is empty."),
        ("data.xlsx", "a,1\n", "expected a file ending in .csv, .tsv, .tab, .txt"),
    ],
)
def test_a_bad_file_is_refused_with_its_line_and_nothing_is_kept(
    ctx, tmp_path, name, content, expected
):
    result = actions.upload(ctx, write(tmp_path / name, content), "labelled_sequences")
    assert not result.ok
    assert expected in result.message
    assert result.task is None and result.rows == []
    assert stored(ctx) == []


def test_an_oversized_file_is_refused_before_it_is_read(ctx, tmp_path):
    big = tmp_path / "big.csv"
    with big.open("wb") as handle:
        handle.truncate(uploads.MAX_UPLOAD_BYTES + 1)
    result = actions.upload(ctx, big, "numeric_series")
    assert not result.ok
    assert result.message == (
        f"big.csv: {uploads.MAX_UPLOAD_BYTES + 1:,} bytes is more than an upload may have "
        f"({uploads.MAX_UPLOAD_BYTES:,} bytes)."
    )
    assert stored(ctx) == []


def test_a_malformed_parallel_text_names_its_line(ctx, tmp_path):
    source = write(tmp_path / "pairs.txt", "a b\tc d\nno tab here\ne f\tg h\n")
    result = actions.upload(ctx, source, "parallel_text")
    assert not result.ok
    assert "line 2" in result.message
    assert stored(ctx) == []


# ---------------------------------------------------------------------------
# Queueing bad specs stores nothing


def test_an_invalid_spec_or_a_huge_sweep_queues_nothing(ctx):
    bad = tiny_classifier()
    bad["model"]["encoder"]["units"] = -3
    with pytest.raises(SpecError, match=r"model\.encoder\.units"):
        actions.queue_spec(ctx, text_of(bad))
    too_long = tiny_classifier()
    too_long["task"]["lag"] = 3
    too_long["model"] = {"type": "vision_transformer"}
    with pytest.raises(SpecError, match=r"model\.type"):
        actions.queue_spec(ctx, text_of(too_long))
    huge = tiny_classifier()
    huge["sweep"] = {"parameters": {"train.seed": list(range(65))}}
    with pytest.raises(actions.AppError, match="65 trials is more than the app queues at once"):
        actions.queue_spec(ctx, text_of(huge))
    with pytest.raises(actions.AppError, match="Choose at least one preset"):
        actions.queue_presets(ctx, [])
    assert ctx.store.list_runs() == []
    assert actions.queue_frame(ctx).empty


# ---------------------------------------------------------------------------
# Train, Compare, Inspect, Export on tiny runs


@pytest.fixture(scope="module")
def app_context(tmp_path_factory):
    """One app context (and training process) for the module's trained runs."""
    context = actions.AppContext(tmp_path_factory.mktemp("runs"), slots=["CPU"])
    yield context
    context.close()


@pytest.fixture(scope="module")
def trained(app_context):
    """A tiny classifier run and a two-trial sweep, trained through the app's queue."""
    context = app_context
    single = actions.queue_spec(context, text_of(tiny_classifier()))
    sweep = tiny_classifier("tiny-sweep", epochs=1)
    sweep["sweep"] = {"parameters": {"train.learning_rate": [0.001, 0.1]}}
    swept = actions.queue_spec(context, text_of(sweep))
    assert context.jobs.wait(single.run_ids + swept.run_ids, timeout=WAIT_S)
    return context, single.run_ids[0], swept


@pytest.mark.large
def test_queued_runs_show_in_the_queue_with_progress_device_and_metric(trained):
    ctx, run_id, swept = trained
    assert swept.message.startswith("Queued sweep ") and len(swept.run_ids) == 2
    records = ctx.store.list_runs(ids=swept.run_ids)
    assert {r.sweep_id for r in records} == {swept.message.split()[2].rstrip(":")}
    assert [r.name for r in records] == ["tiny-sweep-0", "tiny-sweep-1"]
    frame = actions.queue_frame(ctx)
    row = frame[frame["id"] == run_id].iloc[0]
    record = ctx.store.get(run_id)
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")  # `auto`: the app's own
    assert (row["status"], row["place"], row["progress"], row["epoch"]) == (
        "done",
        "CPU",
        "100%",
        "2/2",
    )
    assert (row["device"], row["backend"], row["precision"]) == ("CPU", backend, "float32")
    assert row["metric"] == f"val_accuracy {record.history[-1].metrics['val_accuracy']:.4g}"
    bar = actions.progress_html(ctx, run_id)
    assert 'data-status="done"' in bar and "width:100.0%" in bar
    assert f"{record.params:,} parameters" in bar and f"on CPU ({backend}, float32)" in bar
    assert actions.active_run(ctx) == swept.run_ids[-1]


@pytest.mark.large
def test_the_live_curves_hold_every_logged_metric_of_every_epoch(trained):
    ctx, run_id, _ = trained
    frame = actions.curves_frame(ctx, run_id)
    history = ctx.store.get(run_id).history
    expected = sorted((e.epoch, name, value) for e in history for name, value in e.metrics.items())
    assert sorted(zip(frame["epoch"], frame["metric"], frame["value"], strict=True)) == expected
    assert {"loss", "val_loss", "accuracy", "val_accuracy"} <= set(frame["metric"])


@pytest.mark.large
def test_the_results_table_shows_every_run_filtered_newest_first_and_as_csv(trained, tmp_path):
    ctx, run_id, swept = trained
    table = actions.results_frame(ctx)
    assert list(table["id"]) == [*reversed(swept.run_ids), run_id]
    assert "train.learning_rate" in table.columns  # differs between the runs
    record = ctx.store.get(run_id)
    row = table[table["id"] == run_id].iloc[0]
    assert row["val_accuracy"] == pytest.approx(record.metrics["accuracy"], rel=1e-3)
    assert row["params"] == record.params and row["device"] == "CPU"
    assert list(actions.results_frame(ctx, "tiny-sweep")["id"]) == list(reversed(swept.run_ids))
    assert actions.results_frame(ctx, "no such run").empty
    assert len(actions.results_frame(ctx, statuses=["done"])) == 3
    assert actions.results_frame(ctx, statuses=["failed"]).empty
    with pytest.raises(actions.AppError, match="Unknown status 'finished'"):
        actions.results_frame(ctx, statuses=["finished"])

    path = actions.results_csv(ctx)
    assert path.is_relative_to(ctx.scratch)
    with path.open(newline="") as handle:
        rows = {r["id"]: r for r in csv.DictReader(handle)}
    assert set(rows) == {run_id, *swept.run_ids}
    assert float(rows[run_id]["val_loss"]) == pytest.approx(record.metrics["loss"], rel=1e-9)
    # In the order the table is sorted in: every run by its stored loss, lowest first.
    path = actions.results_csv(ctx, sort_by="val_loss", descending=False)
    with path.open(newline="") as handle:
        order = [r["id"] for r in csv.DictReader(handle)]
    losses = {i: ctx.store.get(i, history=False).metrics["loss"] for i in [run_id, *swept.run_ids]}
    assert order == sorted(losses, key=losses.get)


@pytest.mark.large
def test_selected_runs_overlay_their_curves(trained):
    ctx, run_id, swept = trained
    ids = [run_id, *swept.run_ids]
    assert actions.metric_choices(ctx, ids)[:2] == ["val_accuracy", "val_loss"]
    figure = actions.curves_chart(ctx, ids, "val_loss")
    assert [trace.legendgroup for trace in figure.data] == ids  # one line per run
    for trace in figure.data:
        # Stored as JSON and read back: the same doubles; approx for the float conversion.
        stored = ctx.store.get(trace.legendgroup).curve("val_loss")[1]
        assert list(trace.y) == pytest.approx(stored, rel=1e-12)
    with pytest.raises(actions.AppError, match="expected metrics the runs logged"):
        actions.curves_chart(ctx, ids, "bleu")
    with pytest.raises(actions.AppError, match="Select one or more runs"):
        actions.curves_chart(ctx, [], "val_loss")
    with pytest.raises(actions.AppError, match="finished seq2seq run"):
        actions.bleu_chart(ctx, ids)


@pytest.mark.large
def test_predictions_for_a_validation_example_and_for_typed_symbols(trained):
    ctx, run_id, _ = trained
    task = ctx.task(run_id)
    model = ctx.model(run_id)
    shown = actions.predict(ctx, run_id, "", 3)
    assert f"**True class:** `{int(task.y_val[3])}`" in shown.summary
    expected = np.asarray(model.predict(task.x_val[3:4], verbose=0))[0]
    assert {row[0]: row[1] for row in shown.rows} == {
        str(i): pytest.approx(float(p), abs=1e-4) for i, p in enumerate(expected)
    }

    typed = actions.predict(ctx, run_id, "1 4 2", 0)
    one_hot = np.zeros((1, 5, 5), dtype=np.float32)  # lag 5, 3 distractors + x and y
    one_hot[0, [0, 1, 2], [1, 4, 2]] = 1.0
    expected = np.asarray(model.predict(one_hot, verbose=0))[0]
    assert "symbols 1 4 2 · ·" in typed.summary
    assert sum(row[1] for row in typed.rows) == pytest.approx(1.0, abs=1e-3)
    assert {row[0]: row[1] for row in typed.rows}["1"] == pytest.approx(
        float(expected[1]), abs=1e-4
    )

    for text, index, message in [
        ("1 9", 0, "a symbol index must be 0 to 4, got 9"),
        ("1 2 3 4 1 2", 0, "at most 5 steps for this task, got 6"),
        ("one two", 0, "step 1: expected numbers"),
        ("", 24, "expected 0 to 23 (the validation split has 24 examples), got 24"),
    ]:
        with pytest.raises(actions.AppError, match=re.escape(message)):
            actions.predict(ctx, run_id, text, index)


@pytest.mark.large
def test_gradient_flow_positions_and_the_vit_grid_on_a_recurrent_run(trained):
    ctx, run_id, _ = trained
    figure = actions.gradient_flow(ctx, run_id, 12)
    (line,) = figure.axes[0].get_lines()  # one recurrent layer
    assert list(line.get_xdata()) == list(range(12))
    with pytest.raises(actions.AppError, match="Steps: expected 2 to 200, got 500"):
        actions.gradient_flow(ctx, run_id, 500)
    with pytest.raises(actions.AppError, match="not a Vision Transformer"):
        actions.vit_similarity(ctx, run_id)

    figure = actions.positional_encoding(ctx, None, 16, 30)
    values = figure.axes[0].images[0].get_array()
    position, i = 7, 3  # PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)
    angle = position / 10000 ** (2 * i / 16)
    assert values.shape == (30, 16)
    assert values[position, 2 * i] == pytest.approx(math.sin(angle), abs=1e-5)
    assert values[position, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-5)


@pytest.mark.large
def test_exports_download_with_a_snippet_that_loads_them(trained):
    import keras

    ctx, run_id, _ = trained
    record = ctx.store.get(run_id)
    kept = actions.export_run(ctx, run_id, "keras")
    assert kept.path.name == f"{run_id}.keras" and kept.path.is_relative_to(ctx.scratch)
    assert f'keras.saving.load_model("{run_id}.keras", safe_mode=True)' in kept.snippet
    assert keras.saving.load_model(kept.path, safe_mode=True).count_params() == record.params

    saved = actions.export_run(ctx, run_id, "savedmodel")
    with zipfile.ZipFile(saved.path) as archive:
        assert "savedmodel/saved_model.pb" in archive.namelist()
    assert f'tf.saved_model.load("{run_id}-savedmodel/savedmodel")' in saved.snippet

    code = actions.export_run(ctx, run_id, "python")
    source = code.path.read_text()
    assert "def build_model(" in source
    compile(source, code.path.name, "exec")
    assert f"from {code.path.stem} import build_model" in code.snippet

    with pytest.raises(actions.AppError, match="Format: expected one of"):
        actions.export_run(ctx, run_id, "torchscript")
    with pytest.raises(actions.AppError, match="Choose a run first"):
        actions.export_run(ctx, "", "keras")


@pytest.mark.large
def test_onnx_and_litert_downloads_run_as_their_snippets_say(trained, monkeypatch):
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the ONNX and LiteRT exports convert TensorFlow graphs")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ai_edge_litert.interpreter")
    ctx, run_id, _ = trained
    record = ctx.store.get(run_id)
    model = keras.saving.load_model(
        artifacts.artifact_path(ctx.store, run_id, "model.keras"), safe_mode=True
    )
    inputs = builders.prepare(record.spec).x_val[:1].astype("float32")  # the app's batch of 1
    expected = model.predict(inputs, verbose=0)
    for fmt, suffix in (("onnx", ".onnx"), ("litert", ".tflite")):
        exported = actions.export_run(ctx, run_id, fmt)
        assert exported.path.name == f"{run_id}{suffix}"
        monkeypatch.chdir(exported.path.parent)
        namespace = {"inputs": inputs}
        exec(exported.snippet, namespace)  # the snippet as a user runs it, beside the download
        # float32 reassociation in the runtime moves the last digits only
        np.testing.assert_allclose(namespace["outputs"], expected, atol=1e-4, rtol=0)


def test_a_run_that_did_not_finish_cannot_be_inspected_or_exported(ctx):
    run_id = ctx.store.create_run(load_spec(tiny_classifier()))
    ctx.store.finish(run_id, "failed", error="boom")
    with pytest.raises(actions.AppError, match="only a finished"):
        actions.export_run(ctx, run_id, "keras")
    with pytest.raises(actions.AppError, match="only a finished"):
        actions.predict(ctx, run_id, "", 0)
    with pytest.raises(actions.AppError, match="not in this app's training queue"):
        actions.cancel(ctx, run_id)
    with pytest.raises(actions.AppError, match="only an interrupted run can be resumed"):
        actions.resume(ctx, run_id)
    with pytest.raises(actions.AppError, match="Choose an interrupted run"):
        actions.resume(ctx, "")
    assert actions.interrupted_choices(ctx) == []


def test_resuming_a_stopped_sweep_reads_what_is_left_of_it_once(ctx, monkeypatch):
    # Two trials of a sweep left `queued` with no process to train them (a stopped app).
    spec = load_spec(tiny_classifier(epochs=1))
    ids = [ctx.store.create_run(spec, name="left", sweep_id="sweep-a") for _ in range(2)]
    reads, remaining_trials = [], ctx.store.remaining_trials

    def counted(sweep_id):
        """The store's own `remaining_trials`, counted."""
        reads.append(sweep_id)
        return remaining_trials(sweep_id)

    monkeypatch.setattr(ctx.store, "remaining_trials", counted)
    submitted = actions.resume(ctx, ids[0])
    assert reads == ["sweep-a"]  # the trials checked are the trials queued
    assert submitted.run_ids == ids
    assert ctx.jobs.wait(ids, timeout=WAIT_S)
    assert [ctx.store.get(run_id).status for run_id in ids] == ["done", "done"]


# ---------------------------------------------------------------------------
# Seq2seq, pointer and ViT runs


@pytest.fixture(scope="module")
def arc_runs(app_context):
    """One epoch each of a tiny Bahdanau seq2seq, pointer network and ViT."""
    context = app_context
    seq2seq = presets.spec("seq2seq_bahdanau")
    seq2seq["task"].update(n=200, max_len=6)
    seq2seq["model"]["architecture"].update(units=8, embedding_dim=8)
    pointer = presets.spec("pointer_network")
    pointer["task"].update(n=100, length=4)
    pointer["model"]["units"] = 8
    vit = presets.spec("vit")
    vit["model"].update(patch_size=4, embedding_dim=8, num_heads=2, ff_dim=16, num_layers=1)
    ids = {}
    for key, document in (("seq2seq", seq2seq), ("pointer", pointer), ("vit", vit)):
        document = copy.deepcopy(document)
        document["train"]["epochs"] = 1
        ids[key] = actions.queue_spec(context, text_of(document)).run_ids[0]
    assert context.jobs.wait(ids.values(), timeout=WAIT_S)
    for run_id in ids.values():
        assert context.store.get(run_id).status == "done", context.store.get(run_id).error
    return context, ids


@pytest.mark.large
def test_a_typed_sentence_is_translated_with_its_attention_heatmap(arc_runs):
    ctx, ids = arc_runs
    sentence = "the black cat sleeps ."
    shown = actions.predict(ctx, ids["seq2seq"], sentence, 0)
    assert f"**Source:** {sentence}" in shown.summary and "**Translation:**" in shown.summary
    weights = shown.figure.axes[0].images[0].get_array()
    assert weights.shape == (len(shown.rows), len(sentence.split()))
    assert np.allclose(np.asarray(weights).sum(axis=1), 1.0, atol=1e-4)  # Bahdanau: softmax rows

    example = actions.predict(ctx, ids["seq2seq"], "", 2)
    task = ctx.task(ids["seq2seq"])
    assert (
        f"**Reference:** {task.target_vocabulary.decode(task.y_val[2].tolist())}" in example.summary
    )


@pytest.mark.large
def test_bleu_by_source_length_is_computed_once_and_kept_with_the_run(arc_runs):
    ctx, ids = arc_runs
    figure, table = actions.bleu_chart(ctx, [ids["seq2seq"], ids["vit"]])
    assert set(table["run"]) == {f"seq2seq-bahdanau ({ids['seq2seq']})"}
    assert {"bucket", "bleu", "n"} <= set(table.columns)
    assert table["n"].sum() == len(ctx.task(ids["seq2seq"]).x_val)
    (line,) = figure.data  # the ViT run is left out
    kept = artifacts.artifact_path(ctx.store, ids["seq2seq"], actions.BLEU_ARTIFACT)
    assert kept.is_file()
    again = actions.bleu_table(ctx, ids["seq2seq"])  # read back from the kept file
    # The chart draws the kept scores (an empty bucket's NaN as a gap, None); the table
    # shows them to 1 decimal (±0.05 rounding).
    kept_scores = [None if math.isnan(v) else v for v in again["bleu"]]
    assert list(line.y) == pytest.approx(kept_scores, rel=1e-12)
    assert table["bleu"].tolist() == pytest.approx(again["bleu"].tolist(), abs=0.05, nan_ok=True)


@pytest.mark.large
def test_a_translators_savedmodel_decodes_as_the_export_tab_chose(arc_runs):
    import json

    ctx, ids = arc_runs
    run_id = ids["seq2seq"]
    # The choice is offered for a translator's files that hold its decode loop, and only there.
    assert actions.chooses_decoding(ctx, run_id, "savedmodel")
    assert actions.chooses_decoding(ctx, run_id, "onnx")
    assert not actions.chooses_decoding(ctx, run_id, "keras")
    assert not actions.chooses_decoding(ctx, ids["pointer"], "savedmodel")
    assert not actions.chooses_decoding(ctx, None, "savedmodel")
    assert not actions.chooses_decoding(ctx, "no-such-run", "savedmodel")

    def recorded(exported):
        with zipfile.ZipFile(exported.path) as archive:
            return json.loads(archive.read("savedmodel/assets.extra/decoding.json"))

    beam = actions.export_run(ctx, run_id, "savedmodel")  # the tab's defaults
    assert beam.decoding == "beam search: width 4, length penalty 0.6"
    assert {k: v for k, v in recorded(beam).items() if k != "max_length"} == {
        "method": "beam",
        "width": 4,
        "length_penalty": 0.6,
        "coverage_penalty": 0.0,
    }
    assert "how it decodes: beam search: width 4, length penalty 0.6" in beam.snippet
    wider = actions.export_run(ctx, run_id, "savedmodel", "beam", 3.0, 1)  # number fields' floats
    assert recorded(wider)["width"] == 3 and recorded(wider)["length_penalty"] == 1.0
    greedy = actions.export_run(ctx, run_id, "savedmodel", "greedy")
    assert greedy.decoding == "greedy decoding"
    assert recorded(greedy)["method"] == "greedy"
    for method, width, alpha, message in (
        ("beam", 0, 0.6, "Decoding: Received an invalid value for argument `width`"),
        ("beam", None, 0.6, "argument `width`, expected a positive integer"),
        ("beam", 4, -1, "argument `length_penalty`, expected a number ≥ 0"),
        ("sample", 4, 0.6, "Decoding: expected one of beam, greedy, got 'sample'"),
    ):
        with pytest.raises(actions.AppError, match=re.escape(message)):
            actions.export_run(ctx, run_id, "onnx", method, width, alpha)
    # A run without a decode loop ignores the (hidden) choice.
    assert actions.export_run(ctx, ids["pointer"], "python", "greedy", 0, -1).decoding is None


@pytest.mark.large
def test_typed_numbers_are_sorted_by_pointing(arc_runs):
    ctx, ids = arc_runs
    shown = actions.predict(ctx, ids["pointer"], "0.5 0.1 0.9 0.3", 0)
    positions = [row[1] for row in shown.rows]
    assert sorted(positions) == [0, 1, 2, 3]  # exclude_chosen: a permutation
    assert [row[2] for row in shown.rows] == [["0.5", "0.1", "0.9", "0.3"][p] for p in positions]
    assert shown.figure.axes[0].images[0].get_array().shape == (4, 4)


@pytest.mark.large
def test_a_vit_run_shows_its_image_prediction_and_position_grid(arc_runs):
    ctx, ids = arc_runs
    shown = actions.predict(ctx, ids["vit"], "", 5)
    task = ctx.task(ids["vit"])
    assert f"**True class:** `{int(task.y_val[5])}`" in shown.summary
    assert len(shown.rows) == 10
    figure = actions.vit_similarity(ctx, ids["vit"])
    assert len(figure.axes) == 2 * 2 + 1  # 8×8 digits in 4×4 patches, and a colour bar
    with pytest.raises(actions.AppError, match="a ViT reads images"):
        actions.predict(ctx, ids["vit"], "1 2 3", 0)


@pytest.mark.timeout(60)
def test_the_apps_spec_check_refuses_an_alias_bomb_at_once():
    with allocates_little():
        result = actions.check(billion_laughs())
    assert not result.ok
    assert result.problems == [
        (
            "",
            f"more than {MAX_SPEC_NODES:,} values once its aliases are expanded; "
            "a spec holds a few hundred",
        )
    ]
