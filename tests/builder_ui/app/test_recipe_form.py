"""The Build form lists the training recipe: the schedule's type and its fields, label smoothing.

No Gradio, no browser: the fields come from `TrainSpec`, as every other field's do.
"""

from __future__ import annotations

import yaml

from builder_ui.app import actions


def fields(text: str) -> dict:
    return {field.path: field for field in actions.fields(text)}


def test_the_train_section_offers_the_schedules_and_label_smoothing():
    found = fields(actions.preset_text("transformer"))
    assert found["train.schedule.type"].choices == ("constant", "cosine", "step", "inverse_sqrt")
    assert found["train.schedule.type"].structural
    smoothing = found["train.label_smoothing"]
    assert smoothing.kind == "float" and smoothing.default == 0.0
    assert "(≥ 0, < 1)" in smoothing.description()
    assert not [path for path in found if path.startswith("train.schedule.") and "type" not in path]


def test_choosing_a_schedule_shows_its_own_fields_with_their_defaults():
    text = actions.preset_text("transformer")
    paper, result, redraw = actions.apply_field(text, "train.schedule.type", "inverse_sqrt")
    assert redraw and result.ok
    assert yaml.safe_load(paper)["train"]["schedule"] == {
        "type": "inverse_sqrt",
        "warmup_steps": 4000,
        "scale": 1.0,
    }
    found = fields(paper)
    assert {"train.schedule.warmup_steps", "train.schedule.d_model", "train.schedule.scale"} <= set(
        found
    )
    assert found["train.schedule.d_model"].description().endswith("Default: null.")
    cosine, _, _ = actions.apply_field(paper, "train.schedule.type", "cosine")
    assert {"train.schedule.warmup_steps", "train.schedule.alpha"} <= set(fields(cosine))
    assert "train.schedule.d_model" not in fields(cosine)


def test_a_step_schedule_asks_for_when_to_decay_until_told():
    text = actions.preset_text("transformer")
    step, result, _ = actions.apply_field(text, "train.schedule.type", "step")
    assert not result.ok
    assert result.errors_by_field()["train.schedule.every_epochs"].startswith("required")
    every, result, redraw = actions.apply_field(step, "train.schedule.every_epochs", "4")
    assert result.ok and not redraw
    assert yaml.safe_load(every)["train"]["schedule"]["every_epochs"] == 4
