"""The Train tab's search form: a spec's `sweep:` section read into the form and written back.

A grid's ranges are checked against values worked out by hand (10^-4 … 10^-1, 8 … 64); a
random or bayes search's ranges are written as ranges and read back as the same form; the
specs the form writes are validated as the queue validates them. No Gradio.
"""

from __future__ import annotations

import pytest
import yaml

from builder_ui.app.actions import build
from builder_ui.app.actions.search_form import (
    ParameterRow,
    SearchForm,
    range_values,
    read_search,
    with_search,
)
from builder_ui.app.context import AppError

SPEC = """\
version: 2
name: gru
task: {type: long_lag, lag: 5, n: 120, encoding: ids}
model:
  type: sequence_classifier
  encoder: {type: rnn, cell: gru, units: 8}
train: {epochs: 2, learning_rate: 0.01, seed: 0}
"""

SWEPT = (
    SPEC
    + """\
sweep:
  method: bayes
  num_trials: 3
  seed: 7
  metric: val_loss
  parameters:
    model.encoder.units: [8, 16]
    model.encoder.cell: [gru, lstm]
    train.learning_rate: [0.001, 0.01, 0.1]
  scheduler: {type: asha, grace_period: 1, reduction_factor: 2}
"""
)


def sweep_of(text: str):
    return yaml.safe_load(text).get("sweep")


def test_a_spec_without_a_search_is_an_empty_form_and_an_empty_form_writes_none():
    assert read_search(SPEC).form == SearchForm()
    assert sweep_of(with_search(SWEPT, SearchForm())) is None
    # Turned on but naming no field: still no search.
    assert sweep_of(with_search(SWEPT, SearchForm(enabled=True, rows=(ParameterRow(),)))) is None


def test_a_search_read_into_the_form_is_written_back_the_same():
    form = read_search(SWEPT).form
    assert (form.enabled, form.method, form.num_trials, form.seed) == (True, "bayes", 3, 7)
    assert (form.asha, form.grace_period, form.reduction_factor) == (True, 1, 2)
    assert [(row.path, row.kind, row.values) for row in form.rows] == [
        ("model.encoder.units", "values", "8, 16"),
        ("model.encoder.cell", "values", "gru, lstm"),
        ("train.learning_rate", "values", "0.001, 0.01, 0.1"),
    ]
    written = with_search(SWEPT, form)
    assert sweep_of(written) == sweep_of(SWEPT)  # `metric`, which the form does not show, kept
    assert {k: v for k, v in yaml.safe_load(written).items() if k != "sweep"} == {
        k: v for k, v in yaml.safe_load(SWEPT).items() if k != "sweep"
    }


def test_values_are_read_as_the_spec_reads_them_and_parameters_past_the_rows_stay():
    form = SearchForm(
        enabled=True, rows=(ParameterRow("train.learning_rate", "values", "1e-3, 1.0e-2"),)
    )
    assert sweep_of(with_search(SPEC, form))["parameters"] == {"train.learning_rate": [1e-3, 1e-2]}
    five = (
        SPEC
        + "sweep:\n  parameters:\n"
        + "".join(
            f"    {path}: [{values}]\n"
            for path, values in (
                ("model.encoder.units", "8, 16"),
                ("model.encoder.cell", "gru, lstm"),
                ("train.learning_rate", "0.01, 0.1"),
                ("train.batch_size", "16, 32"),
                ("train.epochs", "1, 2"),
            )
        )
    )
    shown = read_search(five).form
    assert [row.path for row in shown.rows] == [
        "model.encoder.units",
        "model.encoder.cell",
        "train.learning_rate",
        "train.batch_size",
    ]
    # A row edited in the form: the fifth parameter, which has no row, is kept.
    edited = SearchForm(
        enabled=True, rows=(ParameterRow("model.encoder.units", "values", "4"), *shown.rows[1:])
    )
    parameters = sweep_of(with_search(five, edited))["parameters"]
    assert parameters["model.encoder.units"] == [4] and parameters["train.epochs"] == [1, 2]


def test_ranges_are_evenly_spaced_values_whole_when_both_ends_are():
    assert range_values(8, 64, 3) == [8, 36, 64]
    assert range_values(1, 3, 5) == [1, 2, 3]  # 1, 1.5, 2, 2.5, 3 rounded, repeats dropped
    assert range_values(0.0, 0.5, 3) == pytest.approx([0.0, 0.25, 0.5], abs=1e-12)
    # Log: evenly spaced exponents, 10^-4 … 10^-1; six significant digits kept.
    log = range_values(1e-4, 1e-1, 4, log=True)
    assert log == pytest.approx([1e-4, 1e-3, 1e-2, 1e-1], rel=1e-6)
    assert range_values(16, 256, 5, log=True) == [16, 32, 64, 128, 256]
    for low, high, count, log, message in (
        (0.1, 0.01, 3, False, "low must be below high"),
        (0, 1, 3, True, "a log range needs low above 0"),
        (1, 2, 1, False, "count: expected 2 to"),
        (float("nan"), 2, 3, False, "must be numbers"),
    ):
        with pytest.raises(ValueError, match=message):
            range_values(low, high, count, log=log)


def test_a_grids_range_becomes_its_count_values_and_reads_back_as_them():
    form = SearchForm(
        enabled=True,
        method="grid",
        asha=True,
        grace_period=1,
        reduction_factor=3,
        rows=(
            ParameterRow("train.learning_rate", "log range", low=1e-3, high=1e-1, count=3),
            ParameterRow("model.encoder.units", "linear range", low=4, high=12, count=3),
            ParameterRow("model.encoder.cell", "values", "gru, lstm"),
            ParameterRow(),
        ),
    )
    text = with_search(SPEC, form)
    sweep = sweep_of(text)
    assert sweep == {
        "method": "grid",
        "seed": 0,
        "parameters": {
            "train.learning_rate": pytest.approx([1e-3, 1e-2, 1e-1], rel=1e-6),
            "model.encoder.units": [4, 8, 12],
            "model.encoder.cell": ["gru", "lstm"],
        },
        "scheduler": {"type": "asha", "grace_period": 1, "reduction_factor": 3},
    }
    assert build.check(text).problems == []
    read_back = read_search(text).form.rows[1]
    assert read_back == ParameterRow("model.encoder.units", "values", "4, 8, 12")


RANGED = SearchForm(
    enabled=True,
    method="random",
    num_trials=4,
    seed=3,
    asha=True,
    grace_period=1,
    reduction_factor=3,
    rows=(
        ParameterRow("train.learning_rate", "log range", low=1e-3, high=1e-1),
        ParameterRow("model.encoder.units", "linear range", low=4, high=12),
        ParameterRow("model.encoder.cell", "values", "gru, lstm"),
    ),
)


@pytest.mark.parametrize("method", ["random", "bayes"])
def test_a_random_or_bayes_range_is_written_as_a_range_and_reads_back_the_same_form(method):
    form = SearchForm(**{**RANGED.__dict__, "method": method})
    text = with_search(SPEC, form)
    sweep = sweep_of(text)
    assert sweep["parameters"] == {
        "train.learning_rate": {"low": 1e-3, "high": 1e-1, "log": True},
        "model.encoder.units": {"low": 4, "high": 12, "log": False},  # whole: an int range
        "model.encoder.cell": ["gru", "lstm"],
    }
    assert build.check(text).problems == []  # a spec the queue takes
    assert read_search(text).form == form  # no count: a range drawn from needs none
    assert read_search(text, form).shown  # the form that wrote it stays as it is
    # A count typed in the form is for a grid only: it changes nothing here.
    counted = SearchForm(
        **{
            **form.__dict__,
            "rows": tuple(ParameterRow(**{**row.__dict__, "count": 5}) for row in form.rows),
        }
    )
    assert with_search(SPEC, counted) == text


def test_a_range_typed_in_the_spec_fills_its_row_and_its_type_is_kept():
    typed = (
        SPEC
        + """\
sweep:
  method: bayes
  num_trials: 3
  parameters:
    train.learning_rate: {low: 1.0e-4, high: 0.1, log: true}
    train.label_smoothing: {low: 0, high: 1, type: float}
"""
    )
    rows = read_search(typed).form.rows
    assert rows == (
        ParameterRow("train.learning_rate", "log range", low=1e-4, high=0.1),
        ParameterRow("train.label_smoothing", "linear range", low=0, high=1),
    )
    # Written back from the form: the same ranges, a float range's whole ends kept floats.
    parameters = sweep_of(with_search(typed, read_search(typed).form))["parameters"]
    assert parameters == {
        "train.learning_rate": {"low": 1e-4, "high": 0.1, "log": True},
        "train.label_smoothing": {"low": 0.0, "high": 1.0, "log": False, "type": "float"},
    }
    assert isinstance(parameters["train.label_smoothing"]["low"], float)


def test_a_float_fields_range_with_whole_ends_stays_a_float_range():
    form = SearchForm(
        enabled=True,
        method="random",
        num_trials=3,
        rows=(
            ParameterRow("train.learning_rate", "linear range", low=1, high=2),
            ParameterRow("model.encoder.units", "linear range", low=4.0, high=12.0),
        ),
    )
    parameters = sweep_of(with_search(SPEC, form))["parameters"]
    rate, units = parameters["train.learning_rate"], parameters["model.encoder.units"]
    assert (rate["low"], rate["high"]) == (1.0, 2.0) and isinstance(rate["low"], float)
    assert (units["low"], units["high"]) == (4, 12) and isinstance(units["low"], int)
    # A graph block's parameter: the kind of its value in the spec decides.
    graph = build.preset_text("graph_attention_classifier")
    rows = (
        ParameterRow("model.nodes.encoder.params.units", "linear range", low=8.0, high=32.0),
        ParameterRow("train.learning_rate", "log range", low=1e-3, high=1e-1),
    )
    searched = with_search(graph, SearchForm(enabled=True, method="bayes", num_trials=2, rows=rows))
    assert sweep_of(searched)["parameters"]["model.nodes.encoder.params.units"] == {
        "low": 8,
        "high": 32,
        "log": False,
    }
    assert build.check(searched).problems == []


def test_the_form_is_refilled_from_the_spec_only_when_it_says_something_else():
    ranged = SearchForm(
        enabled=True,
        rows=(ParameterRow("model.encoder.units", "linear range", low=4, high=12, count=3),),
    )
    text = with_search(SPEC, ranged)
    kept = read_search(text, ranged)  # the form wrote this spec: it stays a range
    assert kept.shown and kept.form.rows == (
        ParameterRow("model.encoder.units", "values", "4, 8, 12"),
    )
    assert "train.learning_rate" in kept.paths
    assert not read_search(SWEPT, ranged).shown  # another search typed in the YAML
    assert read_search(SPEC, SearchForm()).shown  # no search, none in the form
    # A form that is no search yet (its ends the wrong way round) gives way to the spec's.
    wrong = SearchForm(
        enabled=True, rows=(ParameterRow("train.epochs", "linear range", low=3, high=1, count=2),)
    )
    assert not read_search(text, wrong).shown
    with pytest.raises(AppError, match="fix it in the editor first"):
        read_search("task: [", ranged)


def test_a_bad_row_or_setting_is_named_and_the_spec_is_not_written():
    def refused(form: SearchForm, match: str) -> None:
        with pytest.raises(AppError, match=match):
            with_search(SPEC, form)

    row = ParameterRow("train.learning_rate", "log range", low=0.1, high=0.01, count=3)
    refused(
        SearchForm(enabled=True, rows=(ParameterRow("model.encoder.units", "values", "8"), row)),
        r"^Search parameter 2 \(`train.learning_rate`\): low must be below high",
    )
    refused(
        SearchForm(enabled=True, rows=(ParameterRow("train.epochs", "values", ""),)),
        r"^Search parameter 1 \(`train.epochs`\): give its values",
    )
    refused(
        SearchForm(enabled=True, rows=(ParameterRow("train.epochs", "values", "[1, 2], 3"),)),
        r"each value must be one value",
    )
    refused(
        SearchForm(enabled=True, rows=(ParameterRow("train.epochs", "linear range", low=1),)),
        r"a range needs low, high and count \(a grid tries count values\)",
    )
    drawn = {"enabled": True, "method": "random", "num_trials": 2}
    refused(
        SearchForm(**drawn, rows=(ParameterRow("train.epochs", "linear range", high=3),)),
        r"^Search parameter 1 \(`train.epochs`\): a range needs low and high$",
    )
    refused(
        SearchForm(
            **drawn, rows=(ParameterRow("train.learning_rate", "log range", low=0, high=0.1),)
        ),
        r"^Search parameter 1 \(`train.learning_rate`\): a log range needs low above 0, got 0",
    )
    refused(
        SearchForm(**drawn, rows=(ParameterRow("train.epochs", "linear range", low=3, high=1),)),
        r"low must be below high, got 3.0 and 1.0",
    )
    refused(
        SearchForm(
            enabled=True, method="bayes", rows=(ParameterRow("train.epochs", "values", "1, 2"),)
        ),
        r"^Search trials: expected a whole number, got None",
    )
    refused(
        SearchForm(
            enabled=True,
            asha=True,
            reduction_factor=1,
            rows=(ParameterRow("train.epochs", "values", "1, 2"),),
        ),
        r"^ASHA reduction factor: expected 2 to 100, got 1",
    )


def test_the_fields_offered_are_the_specs_and_a_graphs_block_parameters():
    paths = read_search(SPEC).paths
    assert {"train.learning_rate", "model.encoder.units", "model.encoder.cell"} <= set(paths)
    assert "name" not in paths  # a search varies fields of the task, the model, the training
    graph = build.preset_text("graph_attention_classifier")
    assert {
        "model.nodes.encoder.params.units",
        "model.nodes.attention.params.num_heads",
        "train.learning_rate",
    } <= set(read_search(graph).paths)
