"""The bottleneck lab: its CLI hook, its report, and its helpers.

These are fast units of the report and the helpers, each checked against numbers computed
independently. The quick lab's smallest experiment runs end to end, through `keras-seq lab`
in a child process, in tests/builder_ui/lab/test_runner.py, which reads what it left: the
Markdown report, the PNG figure, the tables, results.json, and the runs in the store.
"""

from __future__ import annotations

import argparse
import json
import math

import keras  # at collection: a test's first TensorFlow import takes seconds
import numpy as np
import pytest

from builder_ui import lab
from builder_ui.cli import lab as lab_cli
from builder_ui.cli.options import lab as lab_options
from builder_ui.lab import report, suite
from builder_ui.lab.common import AGREES, ExperimentResult, table

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def parser():
    result = argparse.ArgumentParser(prog="keras-seq lab")
    lab_options.configure(result)
    return result


# ------------------------------------------------------------------------------ the report


def test_rerunning_another_experiment_keeps_the_first_in_the_report(tmp_path):
    """The report merges: a result already in results.json stays when another is added."""
    out = tmp_path / "report"
    report.write_report(out, [fake_result(1)])
    fourth = ExperimentResult(
        number=4,
        title="Sequential computation",
        claim="claim",
        rule="rule",
        verdict=AGREES,
        finding="measured",
        tables=[table("t", [{"length": 16, "ms": 1.5}])],
        mode="full",
        seconds=65,
    )
    report.write_report(out, [fourth])
    text = (out / report.REPORT_FILE).read_text(encoding="utf-8")
    assert "## 1. experiment 1" in text and "## 4. Sequential computation" in text
    assert [r.number for r in report.load_experiment_results(out)] == [1, 4]
    assert "| 16 | 1.5 |" in text and "1 min 05 s" in text


# ------------------------------------------------------------------------------ fast units


def test_experiments_lists_seven_with_titles_and_claims():
    found = lab.experiments()
    assert [e.number for e in found] == [1, 2, 3, 4, 5, 6, 7]
    assert [e.key for e in found] == [
        "gradients",
        "long_lags",
        "bottleneck",
        "sequential",
        "transformer_choices",
        "visual_attention",
        "conv_lstm",
    ]
    assert "17.82" in found[2].claim and "26.75" in found[2].claim
    assert "25.9" in found[2].claim and "30.6" in found[2].claim
    assert "1000" in found[1].claim
    assert "25.7" in found[4].claim and "25.8" in found[4].claim
    assert all(e.title and e.quick_minutes < e.full_minutes for e in found)
    assert "gaze" in found[5].claim and "Xu et al. 2015" in found[5].claim
    assert "3670.85" in found[6].claim and "4832.49" in found[6].claim
    assert sum(e.quick_minutes for e in found) < 12


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (None, [1, 2, 3, 4, 5, 6, 7]),
        ([], [1, 2, 3, 4, 5, 6, 7]),
        (["3"], [3]),
        (["1,3", "3", 5], [1, 3, 5]),
    ],
)
def test_parse_numbers_takes_repeats_and_comma_lists(values, expected):
    assert lab.parse_numbers(values) == expected


@pytest.mark.parametrize("value", ["0", "8", "two", "1,,2"])
def test_only_refuses_what_is_not_an_experiment_with_exit_code_2(value, tmp_path, capsys):
    cli_parser = parser()
    args = cli_parser.parse_args(["--only", value, "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit) as error:
        lab_cli.run(args, cli_parser)
    assert error.value.code == 2
    message = capsys.readouterr().err
    assert "argument `only`" in message and "1, 2, 3, 4, 5, 6, 7" in message
    assert not (tmp_path / "o").exists()


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    path = tmp_path / "file"
    path.write_text("x")
    cli_parser = parser()
    args = cli_parser.parse_args(["--only", "1", "--out", str(path)])
    with pytest.raises(SystemExit) as error:
        lab_cli.run(args, cli_parser)
    assert error.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_cli_defaults():
    args = parser().parse_args([])
    assert (args.quick, args.only, str(args.out), str(args.runs)) == (
        False,
        None,
        "lab-report",
        "runs",
    )


def test_run_experiment_refuses_an_unknown_number(tmp_path):
    with pytest.raises(ValueError, match=r"argument `number`, expected one of 1, 2, 3, 4, 5, 6, 7"):
        lab.run_experiment(9, tmp_path / "runs")


def test_a_corrupt_results_file_is_refused_with_its_path(tmp_path):
    (tmp_path / report.RESULTS_FILE).write_text("{not json")
    with pytest.raises(ValueError, match=r"results\.json"):
        report.load_results(tmp_path)


def test_result_round_trips_through_json(tmp_path):
    result = ExperimentResult(
        number=2,
        title="t",
        claim="c",
        rule="r",
        verdict=AGREES,
        finding="f",
        tables=[table("x", [{"a": 1, "b": None}, {"a": 2.5, "c": "z"}])],
        figures=["figures/2.png"],
        run_ids=["id1"],
        out_dir=tmp_path,
    )
    again = ExperimentResult.from_dict(json.loads(json.dumps(result.to_dict())), out_dir=tmp_path)
    assert again == result
    assert again.figure_path == tmp_path / "figures/2.png"
    assert again.tables[0]["columns"] == ["a", "b", "c"]
    frame = again.frame()
    assert list(frame.columns) == ["a", "b", "c"] and frame["a"].tolist() == [1, 2.5]


def test_markdown_table_formats_numbers_and_escapes_pipes():
    text = report.markdown_table(
        ["name", "value"],
        [{"name": "a|b", "value": 1.23456e-7}, {"name": "c", "value": None}, {"value": 0.5}],
    )
    assert text.splitlines() == [
        "| name | value |",
        "|:---|---:|",
        "| a\\|b | 1.23e-07 |",
        "| c | — |",
        "| — | 0.5 |",
    ]


@pytest.mark.parametrize(
    ("seconds", "text"), [(42.4, "42 s"), (185, "3 min 05 s"), (3725, "1 h 02 min")]
)
def test_duration(seconds, text):
    assert report.duration(seconds) == text


def test_lstm_parameter_formula_matches_keras():
    from builder_ui.lab.sequential import D_MODEL, lstm_parameters, lstm_units_matching

    for units in (3, 84):
        lstm = keras.layers.LSTM(units, return_sequences=True)
        lstm.build((None, None, D_MODEL))
        head = keras.layers.Dense(D_MODEL)
        head.build((None, None, units))
        assert lstm_parameters(units) == lstm.count_params() + head.count_params()
    target = 50_000
    best = lstm_units_matching(target)
    assert abs(lstm_parameters(best) - target) <= abs(lstm_parameters(best + 1) - target)
    assert abs(lstm_parameters(best) - target) <= abs(lstm_parameters(best - 1) - target)


def test_position_similarity_summaries_on_a_known_grid():
    from builder_ui.lab.transformer_choices import neighbour_similarity, similarity_by_distance

    # A 3×3 grid whose similarity is 1 − distance / 4 (Manhattan distance).
    coords = [(r, c) for r in range(3) for c in range(3)]
    similarity = np.zeros((3, 3, 3, 3))
    for r, c in coords:
        for r2, c2 in coords:
            similarity[r, c, r2, c2] = 1 - (abs(r - r2) + abs(c - c2)) / 4
    profile = similarity_by_distance(similarity)
    assert profile == pytest.approx({1: 0.75, 2: 0.5, 3: 0.25, 4: 0.0})
    near, far = neighbour_similarity(similarity)
    # 16 ordered pairs at distance 3 (value 0.25) and 4 at distance 4 (value 0).
    assert near == pytest.approx(0.75)
    assert far == pytest.approx((16 * 0.25 + 4 * 0.0) / 20)
    assert not math.isnan(far)


def test_distance_correlation_is_minus_one_for_a_strictly_falling_similarity():
    from builder_ui.lab.transformer_choices import distance_correlation

    coords = [(r, c) for r in range(4) for c in range(4)]
    similarity = np.zeros((4, 4, 4, 4))
    for r, c in coords:
        for r2, c2 in coords:
            similarity[r, c, r2, c2] = 1 - (abs(r - r2) + abs(c - c2)) / 6
    # Ties in distance give equal similarity: the ranks agree exactly, ρ = −1.
    assert distance_correlation(similarity) == pytest.approx(-1.0, abs=1e-12)
    noise = np.random.default_rng(0).normal(size=similarity.shape)
    assert abs(distance_correlation(noise)) < 0.2  # 120 pairs of noise: ρ near 0


def fake_result(number):
    return ExperimentResult(
        number=number,
        title=f"experiment {number}",
        claim="claim",
        rule="rule",
        verdict=AGREES,
        finding="measured",
        tables=[table("t", [{"x": number}])],
        mode="quick",
    )


def test_ctrl_c_exits_130_and_keeps_what_finished(tmp_path, monkeypatch, capsys):
    """Experiment 1 finishes, Ctrl-C arrives during 2: exit 130, the report holds 1."""

    def run_experiment(number, store, **kwargs):
        if number == 2:
            raise KeyboardInterrupt
        return fake_result(number)

    monkeypatch.setattr(suite, "run_experiment", run_experiment)
    cli_parser = parser()
    out = tmp_path / "report"
    args = cli_parser.parse_args(["--only", "1,2", "--out", str(out), "--runs", str(tmp_path)])
    assert lab_cli.run(args, cli_parser) == 130
    assert "Interrupted" in capsys.readouterr().err
    assert [r.number for r in report.load_experiment_results(out)] == [1]
    assert "## 1. experiment 1" in (out / report.REPORT_FILE).read_text(encoding="utf-8")


def test_a_failing_experiment_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    def run_experiment(number, store, **kwargs):
        if number == 1:
            raise RuntimeError("boom")
        return fake_result(number)

    monkeypatch.setattr(suite, "run_experiment", run_experiment)
    cli_parser = parser()
    out = tmp_path / "report"
    args = cli_parser.parse_args(["--only", "1,3", "--out", str(out), "--runs", str(tmp_path)])
    assert lab_cli.run(args, cli_parser) == 1
    results = {r.number: r for r in report.load_experiment_results(out)}
    assert results[1].verdict == lab.FAILED and "RuntimeError: boom" in results[1].finding
    assert results[3].verdict == AGREES
