"""Every layer case's saved files reload in one fresh interpreter, which has never seen them.

The layer test files keep their cases in `SAVED_CASES` and run the in-process checks on them
(registration, config round trip, masking, mixed precision, a jit-compiled fit step); here
each case's model is saved in this process, then one fresh interpreter serves every
SavedModel without keras_seq (where the backend can export one) and loads every `.keras`
file with `safe_mode=True`, comparing the outputs with this process's within each case's
`atol` (see `keras_seq.testing.layer_checks.check_saved_layers`). A failure names each case
that failed, not only the first.
"""

import dataclasses

import pytest

from keras_seq.testing.layer_checks import LayerCase, check_saved_layers
from tests.keras_seq.layers import (
    test_attention_layers,
    test_cec_lstm,
    test_patches,
    test_pooling,
    test_positional,
    test_recurrent_decoder,
    test_transformer_blocks,
)
from tests.keras_seq.models import test_seq2seq_model

SOURCES = {
    "attention": test_attention_layers,
    "cec_lstm": test_cec_lstm,
    "patches": test_patches,
    "pooling": test_pooling,
    "positional": test_positional,
    "recurrent_decoder": test_recurrent_decoder,
    "transformer": test_transformer_blocks,
    "seq2seq": test_seq2seq_model,
}

SAVED_CASES = {
    f"{prefix}/{name}": case
    for prefix, module in SOURCES.items()
    for name, case in module.SAVED_CASES.items()
}


@pytest.mark.large  # starts a fresh interpreter
@pytest.mark.backend_agnostic
def test_every_layer_case_reloads_from_its_saved_files_in_a_fresh_interpreter(tmp_path):
    check_saved_layers(SAVED_CASES, tmp_path)


def _unbuildable(**kwargs):
    raise ValueError("this layer cannot be built")


@pytest.mark.large  # starts a fresh interpreter
def test_every_failing_case_is_named_and_the_others_still_run(tmp_path):
    good = test_pooling.SAVED_CASES["masked_mean"]
    cases = {
        "unbuildable": LayerCase(make=_unbuildable, features=4),  # fails here, when saved
        # Fail in the fresh interpreter: their package cannot be imported to load the file.
        "unimportable": dataclasses.replace(good, package="keras_seq_no_such_package"),
        "good": good,
        "unimportable_too": dataclasses.replace(good, package="keras_seq_no_such_package_2"),
    }
    with pytest.raises(AssertionError) as error:
        check_saved_layers(cases, tmp_path, checks=("keras_file",))
    message = str(error.value)
    header = "Saved-file checks failed for unbuildable, unimportable, unimportable_too:"
    assert message.splitlines()[0] == header  # "good" ran after a failure, and passed
    assert "unbuildable, saving: Traceback" in message
    assert "this layer cannot be built" in message
    for package in ("keras_seq_no_such_package", "keras_seq_no_such_package_2"):
        assert f"No module named '{package}'" in message
