"""A Compare refresh leaves the runs picked while it ran picked.

Each refresh reads the picker's value when it starts and answers when the table is built; a
refresh follows every change in the store, so while a run trains one is nearly always under
way when a user clicks a row.
"""

from __future__ import annotations

from builder_ui.app.tabs.compare import runs_after_refresh

CHOICES = [("a · lstm", "a"), ("b · gru", "b"), ("c · transformer", "c")]


def test_a_refresh_sends_the_choices_but_not_the_selection_it_read():
    update = runs_after_refresh(CHOICES, ["a"])
    assert update["choices"] == CHOICES
    # No value: the browser keeps what it holds now, e.g. "a" and a "b" clicked meanwhile.
    assert "value" not in update


def test_a_refresh_with_nothing_picked_changes_only_the_choices():
    assert "value" not in runs_after_refresh(CHOICES, None)
    assert "value" not in runs_after_refresh(CHOICES, [])


def test_a_picked_run_deleted_elsewhere_is_dropped_from_the_selection():
    update = runs_after_refresh(CHOICES[1:], ["a", "c"])
    assert update["choices"] == CHOICES[1:]
    assert update["value"] == ["c"]
