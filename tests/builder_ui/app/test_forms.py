"""The Build form shows only the fields that apply, each with its own default in its help.

A field applies when the spec's other choices let it take a value besides its
default: `forget_gate` only with the `cec_lstm` cell, the sequence model's
`embedding_dim` only with the `rnn` encoder, `input_feeding` only with a Luong
attention. The rule is read from the models' own validators, not from a list
in the form, so a plugin's model gets it too. No Gradio, no browser.
"""

from __future__ import annotations

import yaml

from builder_ui.app import actions, forms


def paths(text: str) -> set[str]:
    return {field.path for field in actions.fields(text)}


def test_cec_lstm_options_show_only_with_the_cec_lstm_cell():
    gru = actions.preset_text("gru")
    assert "model.encoder.forget_gate" not in paths(gru)
    assert "model.encoder.peephole" not in paths(gru)
    as_cec, _, redraw = actions.apply_field(gru, "model.encoder.cell", "cec_lstm")
    assert redraw  # the form gains two fields, so it is drawn again
    assert {"model.encoder.forget_gate", "model.encoder.peephole"} <= paths(as_cec)
    assert {
        "model.encoder.truncated_gradients",
        "model.encoder.input_gate_bias",
        "model.encoder.output_gate_bias",
        "model.encoder.cell_activation",
        "model.encoder.output_activation",
        "model.encoder.gate_activation",
    } <= paths(as_cec)
    # The forget gate's bias applies only once there is a forget gate.
    assert "model.encoder.forget_gate_bias" not in paths(as_cec)
    with_forget, _, _ = actions.apply_field(as_cec, "model.encoder.forget_gate", True)
    assert "model.encoder.forget_gate_bias" in paths(with_forget)


def test_the_rnn_only_embedding_is_not_shown_on_a_transformer_encoder():
    assert "model.embedding_dim" not in paths(actions.preset_text("transformer"))
    assert "model.embedding_dim" in paths(actions.preset_text("gru"))


def test_seq2seq_attention_options_follow_the_chosen_attention():
    plain = actions.preset_text("seq2seq")  # no attention
    assert "model.architecture.input_feeding" not in paths(plain)
    assert "model.architecture.attention_units" not in paths(plain)
    luong, _, _ = actions.apply_field(plain, "model.architecture.attention", "luong_dot")
    assert "model.architecture.input_feeding" in paths(luong)
    assert "model.architecture.attention_units" not in paths(luong)  # additive scores only
    additive, _, _ = actions.apply_field(plain, "model.architecture.attention", "bahdanau")
    assert "model.architecture.attention_units" in paths(additive)


def test_a_value_the_user_set_stays_in_the_form_with_its_error_after_the_cell_changes():
    lstm_1997 = actions.preset_text("lstm_1997")  # cec_lstm with forget_gate: false
    text, result, _ = actions.apply_field(lstm_1997, "model.encoder.cell", "gru")
    assert yaml.safe_load(text)["model"]["encoder"]["forget_gate"] is False  # nothing dropped
    assert "model.encoder.forget_gate" in paths(text)
    assert "only for cell 'cec_lstm'" in result.errors_by_field()["model.encoder.forget_gate"]


def test_a_hidden_field_can_still_be_set_by_a_script_and_then_shows():
    plain = actions.preset_text("seq2seq")
    text, result, redraw = actions.apply_field(plain, "model.architecture.input_feeding", True)
    assert redraw and not result.ok
    assert "model.architecture.input_feeding" in paths(text)


def test_each_field_says_its_own_default_and_what_it_does():
    found = {field.path: field for field in actions.fields(actions.preset_text("seq2seq"))}
    assert found["model.architecture.units"].description() == (
        "Width of the encoder and the decoder (a bidirectional encoder has `units / 2` per "
        "direction). (≥ 1, ≤ 65536) Default: 64."
    )
    assert found["model.architecture.cell"].description().endswith("Default: lstm.")
    assert found["model.architecture.attention"].description().endswith("Default: null.")
    assert found["model.architecture.type"].description().endswith("Default: rnn.")
    assert found["train.early_stopping"].description().endswith("Default: off.")
    assert found["model.reverse_source"].description().endswith("Default: false.")
    architecture = [f for f in found.values() if f.path.startswith("model.architecture.")]
    helps = [field.help for field in architecture]
    assert all(helps) and len(set(helps)) == len(helps)  # no help line shared by several


def test_every_preset_field_states_a_default_unless_it_is_required():
    for preset in actions.presets_list():
        for field in actions.fields(actions.preset_text(preset[1])):
            if field.path != "name":
                assert "Default: " in field.description(), (preset[1], field.path)


def test_structure_ignores_numbers_so_typing_never_redraws_the_form():
    text = actions.preset_text("seq2seq_bahdanau")
    before = forms.structure(yaml.safe_load(text))
    typed, _, redraw = actions.apply_field(text, "model.architecture.units", "-3")
    assert not redraw
    assert forms.structure(yaml.safe_load(typed)) == before
