"""The Build tab's summary shows the memory estimate beside the parameter count, and refuses
to build a model over the memory budget (before its weights exist)."""

from __future__ import annotations

import pytest

from builder_ui.app import actions
from builder_ui.builders import presets
from builder_ui.builders.memory import BUDGET_ENV
from builder_ui.specs import SpecError
from tests.allocation import allocates_little


@pytest.fixture(autouse=True)
def _default_budget(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "")


def _gru_text(units: int) -> str:
    document = presets.spec("gru")
    document["model"]["encoder"]["units"] = units
    return actions.dump(document)


def test_the_summary_shows_the_estimate_beside_the_parameter_count():
    summary = actions.summarize(_gru_text(16))
    assert summary.memory.startswith("training needs about ")
    assert f"{summary.params:,} parameters" in summary.memory  # the estimate's own count
    assert f"**{summary.params:,} parameters** ({summary.trainable:,} trainable) · " in (
        summary.headline
    )
    assert summary.memory in summary.headline


def test_the_summary_refuses_a_model_over_the_budget_before_building_it():
    import keras  # loaded before the allocation check, as in the running app

    assert keras
    with allocates_little(), pytest.raises(SpecError) as caught:
        actions.summarize(_gru_text(26000))
    [(path, message)] = caught.value.problems
    assert path == "model.encoder.units"
    assert message.startswith("26000 makes this model need about ")
    assert "over the memory budget of " in message


def test_the_budget_variable_changes_what_the_summary_refuses(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "1kB")
    with pytest.raises(SpecError, match=r"over the memory budget of 1\.0 kB"):
        actions.summarize(_gru_text(16))


def test_the_train_tab_refuses_to_queue_a_model_over_the_budget(tmp_path):
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"])
    try:
        with pytest.raises(SpecError) as caught:
            actions.queue_spec(context, _gru_text(26000))
        assert any(path == "model.encoder.units" for path, _ in caught.value.problems)
        assert context.store.list_runs() == []  # nothing queued, nothing recorded
    finally:
        context.close()
