"""`keras-seq validate` says what training needs, and refuses what training would refuse.

A valid spec is printed with its parameter count and memory estimate; each of issue 39's
untrainable specs exits 2 with one message naming the block (or field) at fault, and
`train` refuses them the same way before it creates a store.
"""

from __future__ import annotations

import pytest
import yaml

from builder_ui import cli
from builder_ui.builders.memory import BUDGET_ENV
from tests.builder_ui.builders.test_graph_fit import (
    ENCODER_INTO_HEAD,
    FLATTENED_ATTENTION,
    IDENTITY,
    POOLED_ENCODER,
    TRANSLATOR,
    by_hand,
)

UNTRAINABLE = {
    "input_into_output": (
        IDENTITY,
        "model.nodes[1].inputs.x: head (Output) gives (None, 8, 8, 10)",
    ),
    "encoder_into_output": (
        ENCODER_INTO_HEAD,
        "model.nodes[4].inputs.x: head (Output) gives (None, 17, 10)",
    ),
    "attention_after_flatten": (
        FLATTENED_ATTENTION,
        "model.nodes[3].inputs: attention (MultiHeadAttention) on query (None, 80)",
    ),
    "translator_decoding": (
        TRANSLATOR,
        "model.architecture.max_length: 1048576 makes this model need about ",
    ),
}


@pytest.fixture(autouse=True)
def _budget(monkeypatch):
    """A budget the translator's 215 GB of decoding exceeds on any machine; undone after."""
    monkeypatch.setenv(BUDGET_ENV, "64GB")


def write(tmp_path, document, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("case", sorted(UNTRAINABLE))
def test_validate_and_train_exit_2_naming_the_block_of_an_untrainable_spec(tmp_path, capsys, case):
    document, expected = UNTRAINABLE[case]
    path = write(tmp_path, document)
    assert cli.main(["validate", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"keras-seq validate: error: {expected}"), captured.err
    runs = tmp_path / "runs"
    assert cli.main(["train", path, "--runs", str(runs)]) == 2
    assert expected in capsys.readouterr().err
    assert not runs.exists()  # no store, no run


def test_validate_prints_the_parameter_count_and_memory_estimate_beside_valid(tmp_path, capsys):
    path = write(tmp_path, POOLED_ENCODER)
    assert cli.main(["validate", path, "--memory-budget", "2GB"]) == 0
    first, count, budget = capsys.readouterr().out.splitlines()
    assert first == f"{path}: valid (model 'graph' on task 'digits')"
    model, _ = by_hand(POOLED_ENCODER)  # Keras' own count of the same layers' weights
    parameters = f"{model.count_params():,} parameters"
    assert count.startswith(f"  {parameters}; training needs about ")
    assert f"({parameters}: " in count and "activations of one batch of 16: " in count
    assert budget == (
        "  within the memory budget of 2.0 GB (2GB, set by KERAS_SEQ_MEMORY_BUDGET or "
        "--memory-budget)"
    )


def test_validate_prints_each_trials_count_and_estimate(tmp_path, capsys):
    document = {
        **POOLED_ENCODER,
        "sweep": {"parameters": {"model.nodes.encoder.params.ff_dim": [8, 64]}},
    }
    path = write(tmp_path, document)
    assert cli.main(["validate", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}: valid (model 'graph' on task 'digits', 2 trials)"
    small, large = (
        int(line.split(": ")[1].split(" parameters")[0].replace(",", "")) for line in lines[1:3]
    )
    assert lines[1].startswith("  trial 0 (model.nodes.encoder.params.ff_dim=8): ")
    assert lines[2].startswith("  trial 1 (model.nodes.encoder.params.ff_dim=64): ")
    # The feed-forward network's two Dense layers grow by 16·56 + 56 and 56·16 weights.
    assert large - small == 16 * 56 + 56 + 56 * 16
    assert lines[3].startswith("  within the memory budget of 64.0 GB")


def test_validate_checks_a_bayes_range_at_its_ends_and_train_counts_its_trials(tmp_path, capsys):
    document = {
        **POOLED_ENCODER,
        "sweep": {
            "method": "bayes",
            "num_trials": 5,
            "parameters": {"model.nodes.encoder.params.ff_dim": {"low": 8, "high": 64}},
        },
    }
    path = write(tmp_path, document)
    assert cli.main(["validate", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"{path}: valid (model 'graph' on task 'digits', 5 trials chosen from 57 combinations "
        "(2 checked: each range at its ends))"
    )
    assert lines[1].startswith("  trial 0 (model.nodes.encoder.params.ff_dim=8): ")
    assert lines[2].startswith("  trial 1 (model.nodes.encoder.params.ff_dim=64): ")
    # `train` refuses a sweep, counting the trials it runs (num_trials), not the combinations.
    assert cli.main(["train", path, "--runs", str(tmp_path / "runs")]) == 2
    assert f"has a `sweep:` section (5 trials); run it with `keras-seq sweep {path}`" in (
        capsys.readouterr().err
    )
