"""The app cannot queue what training would refuse: issue 39's specs, checked as the tabs do.

The Build tab's check (shown as "✓ Valid spec" or the problems, on every edit) refuses the
three untrainable graphs at their block, and the Train tab's Queue refuses all four cases,
the translator whose decoding exceeds the budget included, with nothing recorded. The
whole check the Build tab shows after each edit (`whole_check`) refuses that translator too,
before it is queued, and says what a valid spec's training needs.
"""

from __future__ import annotations

import pytest

from builder_ui.app import actions
from builder_ui.builders.memory import BUDGET_ENV
from builder_ui.specs import SpecError
from tests.builder_ui.builders.test_graph_fit import (
    ENCODER_INTO_HEAD,
    FLATTENED_ATTENTION,
    IDENTITY,
    POOLED_ENCODER,
    TRANSLATOR,
)
from tests.builder_ui.engine.quick_runner import QuickRunner

GRAPHS = {
    "input_into_output": (IDENTITY, "model.nodes[1]", "head (Output) gives (None, 8, 8, 10)"),
    "encoder_into_output": (
        ENCODER_INTO_HEAD,
        "model.nodes[4]",
        "head (Output) gives (None, 17, 10)",
    ),
    "attention_after_flatten": (
        FLATTENED_ATTENTION,
        "model.nodes[3]",
        "attention (MultiHeadAttention) on query (None, 80); value (None, 80): the shapes pass",
    ),
}


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    """An app whose queue would train in this process (`QuickRunner`), under a 64 GB budget."""
    monkeypatch.setenv(BUDGET_ENV, "64GB")
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"], runner=QuickRunner())
    yield context
    context.close()


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_the_build_tabs_check_refuses_an_untrainable_graph_at_its_block(case):
    document, path, words = GRAPHS[case]
    result = actions.check(actions.dump(document))
    assert not result.ok
    [(found_path, message)] = result.problems
    assert found_path == path
    assert message.startswith(words), message
    assert "Valid spec" not in actions.problems_markdown(result.problems)


def test_the_build_tabs_check_still_passes_a_trainable_graph():
    result = actions.check(actions.dump(POOLED_ENCODER))
    assert result.ok, result.problems
    assert actions.problems_markdown(result.problems).startswith("✓ **Valid spec.**")


@pytest.mark.parametrize("case", [*sorted(GRAPHS), "translator_decoding"])
def test_the_train_tab_queues_nothing_that_training_would_refuse(ctx, case):
    document = TRANSLATOR if case == "translator_decoding" else GRAPHS[case][0]
    with pytest.raises(SpecError) as caught:
        actions.queue_spec(ctx, actions.dump(document))
    [(path, message)] = caught.value.problems
    if case == "translator_decoding":
        assert path == "model.architecture.max_length"
        assert message.startswith("1048576 makes this model need about ")
    else:
        assert path.startswith(GRAPHS[case][1])
        assert message.startswith(GRAPHS[case][2])
    assert ctx.store.list_runs() == []
    assert actions.queue_frame(ctx).empty


def test_the_build_tabs_whole_check_refuses_the_translator_over_the_budget_at_its_field(
    monkeypatch,
):
    monkeypatch.setenv(BUDGET_ENV, "64GB")
    quick = actions.check(actions.dump(TRANSLATOR))
    assert quick.ok  # the fields alone are fine: only the memory estimate refuses it
    whole = actions.whole_check(quick)
    [(path, message)] = whole.problems
    assert path == "model.architecture.max_length"
    assert message.startswith("1048576 makes this model need about ")
    assert actions.check(actions.dump(TRANSLATOR), whole=True).problems == whole.problems


def test_the_build_tabs_whole_check_says_what_a_valid_spec_needs():
    result = actions.check(actions.dump(POOLED_ENCODER), whole=True)
    assert result.ok and result.memory.startswith("about ")
    shown = actions.problems_markdown(result.problems, result.memory)
    assert shown.startswith("✓ **Valid spec.**") and f"Training needs {result.memory}." in shown
