"""ClassTokenPooling, MaskedMeanPooling and FinalStatePooling: one vector per sequence, against
NumPy and against the final states Keras's own recurrent layers return."""

import keras
import numpy as np
import pytest

from keras_seq.layers import ClassTokenPooling, FinalStatePooling, MaskedMeanPooling
from keras_seq.testing.layer_checks import IN_PROCESS_CHECKS, LayerCase, check_layer


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.mark.backend_agnostic
def test_class_token_pooling_keeps_the_first_token_and_drops_the_mask():
    x = np.random.default_rng(4).normal(size=(3, 5, 6)).astype("float32")
    layer = ClassTokenPooling()
    np.testing.assert_array_equal(_numpy(layer(x)), x[:, 0])
    assert layer.compute_mask(x, np.ones((3, 5), bool)) is None
    assert layer.compute_output_shape((None, 5, 6)) == (None, 6)


@pytest.mark.backend_agnostic
def test_masked_mean_pooling_matches_numpy_and_gives_zeros_for_empty_rows():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 4, 2)).astype("float32")
    mask = np.array([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 0, 0]], bool)
    expected = np.stack([x[0].mean(axis=0), x[1, [0, 2]].mean(axis=0), np.zeros(2)])
    np.testing.assert_allclose(_numpy(MaskedMeanPooling()(x, mask=mask)), expected, rtol=1e-6)
    np.testing.assert_allclose(_numpy(MaskedMeanPooling()(x)), x.mean(axis=1), rtol=1e-6)


@pytest.mark.parametrize("cls", [ClassTokenPooling, MaskedMeanPooling, FinalStatePooling])
def test_pooling_layers_are_registered_and_reload_from_config(cls):
    assert keras.saving.get_registered_name(cls) == f"keras_seq>{cls.__name__}"
    layer = cls(name="pool")
    clone = cls.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


# Their saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    "masked_mean": LayerCase(make=lambda **kw: MaskedMeanPooling(**kw), features=4),
    # masking=False: the class token is never masked, so the layer reads step 0 whatever
    # the mask says (the masking check would replace a masked step 0 by noise).
    "class_token": LayerCase(make=lambda **kw: ClassTokenPooling(**kw), features=4, masking=False),
    "final_state": LayerCase(make=lambda **kw: FinalStatePooling(**kw), features=4),
}


@pytest.mark.parametrize("name", SAVED_CASES)
def test_layer_passes_in_process_layer_checks(name, tmp_path):
    check_layer(SAVED_CASES[name], tmp_path, checks=IN_PROCESS_CHECKS)


def test_docstring_examples_run():
    import doctest

    from keras_seq.layers import pooling

    globs = {"np": np, "keras": keras, **vars(pooling)}
    result = doctest.testmod(pooling, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def _final_states_numpy(x, mask, bidirectional):
    """The paper's summary from the outputs: h at the last real step ([h→_S; h←_1] if both)."""
    half = x.shape[-1] // 2
    rows = []
    for row, real in zip(x, mask, strict=True):
        steps = np.flatnonzero(real)
        if not len(steps):
            rows.append(np.zeros(x.shape[-1], x.dtype))
        elif bidirectional:
            rows.append(np.concatenate([row[steps[-1], :half], row[steps[0], half:]]))
        else:
            rows.append(row[steps[-1]])
    return np.stack(rows)


@pytest.mark.backend_agnostic
@pytest.mark.parametrize("bidirectional", [False, True])
def test_final_state_pooling_reads_the_last_real_step_and_zeros_for_empty_rows(bidirectional):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(4, 5, 6)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0], [0, 1, 1, 0, 0]], bool)
    layer = FinalStatePooling(bidirectional=bidirectional)
    expected = _final_states_numpy(x, mask, bidirectional)
    # One element picked by a one-hot sum: exact up to adding zeros.
    np.testing.assert_allclose(_numpy(layer(x, mask=mask)), expected, atol=1e-7)
    everything = _final_states_numpy(x, np.ones((4, 5), bool), bidirectional)
    np.testing.assert_allclose(_numpy(layer(x)), everything, atol=1e-7)
    assert layer.compute_mask(x, mask) is None


@pytest.mark.backend_agnostic
@pytest.mark.parametrize("bidirectional", [False, True])
def test_final_state_pooling_gives_the_final_state_a_masked_gru_returns(bidirectional):
    # Right-padded ids, masked by the embedding: the state Keras's GRU returns (return_state)
    # is what the pooling reads off its output sequence. Same kernels, so 1e-6.
    ids = np.array([[3, 5, 7, 0, 0], [2, 4, 6, 8, 9], [5, 0, 0, 0, 0]])
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)
    gru = keras.layers.GRU(3, return_sequences=True, return_state=True)
    recurrent = keras.layers.Bidirectional(gru) if bidirectional else gru
    x = embedded(ids)
    outputs, *states = recurrent(x, mask=embedded.compute_mask(ids))
    expected = np.concatenate([_numpy(state) for state in states], axis=-1)
    pooled = FinalStatePooling(bidirectional=bidirectional)(outputs, mask=ids != 0)
    np.testing.assert_allclose(_numpy(pooled), expected, atol=1e-6)


@pytest.mark.backend_agnostic
def test_final_state_pooling_of_a_conv_lstm_is_the_final_hidden_map_it_returns():
    # Steps that are maps (Shi et al. 2015's H_t): the state ConvLSTM2D returns is the last
    # step of its output sequence. Same kernels, so 1e-6.
    frames = np.random.default_rng(2).normal(size=(2, 4, 5, 5, 1)).astype("float32")
    conv_lstm = keras.layers.ConvLSTM2D(
        3, 3, padding="same", return_sequences=True, return_state=True
    )
    outputs, hidden, _ = conv_lstm(frames)
    pooled = FinalStatePooling()(outputs)
    assert tuple(pooled.shape) == (2, 5, 5, 3)
    np.testing.assert_allclose(_numpy(pooled), _numpy(hidden), atol=1e-6)


def test_final_state_pooling_refuses_an_odd_width_both_ways_and_a_non_boolean():
    with pytest.raises(ValueError, match="even number of features, got 5"):
        FinalStatePooling(bidirectional=True)(np.zeros((1, 2, 5), "float32"))
    with pytest.raises(ValueError, match="`bidirectional` must be True or False, got 'yes'"):
        FinalStatePooling(bidirectional="yes")
