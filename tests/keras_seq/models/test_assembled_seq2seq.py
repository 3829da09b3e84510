"""AssembledSeq2Seq: a RecurrentDecoder over an encoder model of one's own.

The reference is `RNNSeq2Seq`, whose encoder–decoder is checked against NumPy
versions of the papers' equations elsewhere: an encoder assembled from the same
layers (embedding, bidirectional GRU, its final state `[h→_S; h←_1]` read by
`FinalStatePooling`), given the same weights, must give the same probabilities.
Both run the same float32 kernels in the same order, so they agree to 1e-6.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_seq.layers import FinalStatePooling
from keras_seq.models import AssembledSeq2Seq, RNNSeq2Seq, greedy_decode

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

ATOL = 1e-6  # see the module docstring
SOURCE = np.array([[5, 6, 7, 0, 0], [4, 9, 9, 9, 3], [8, 0, 0, 0, 0]])
TARGET = np.array([[8, 9, 2, 0], [7, 7, 7, 2], [6, 2, 0, 0]])


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def bidirectional_gru_encoder(vocab=20, embedding_dim=8, units=16, state=True):
    source = keras.Input((None,), dtype="int32", name="source")
    embedded = keras.layers.Embedding(vocab, embedding_dim, mask_zero=True)(source)
    gru = keras.layers.GRU(units // 2, return_sequences=True)
    states = keras.layers.Bidirectional(gru)(embedded)
    outputs = {"memory": states}
    if state:
        outputs["state"] = FinalStatePooling(bidirectional=True)(states)
    return keras.Model(source, outputs)


def models(attention="bahdanau", reverse_source=False):
    keras.utils.set_random_seed(1)
    reference = RNNSeq2Seq(
        20,
        30,
        cell="gru",
        units=16,
        bidirectional=True,
        attention=attention,
        embedding_dim=8,
        reverse_source=reverse_source,
    )
    assembled = AssembledSeq2Seq(
        20,
        30,
        bidirectional_gru_encoder(),
        cell="gru",
        units=16,
        attention=attention,
        embedding_dim=8,
        reverse_source=reverse_source,
    )
    # The reference holds [source, target, encoder…, decoder…, output]; the assembled model
    # [encoder (its embedding first)…, target, decoder…, output].
    weights = reference.get_weights()
    assembled.set_weights([weights[0], *weights[2:8], weights[1], *weights[8:]])
    return reference, assembled


@pytest.mark.backend_agnostic
@pytest.mark.parametrize(
    ("attention", "reverse_source"),
    [("bahdanau", False), ("luong_general", True), (None, False)],
)
def test_an_assembled_bidirectional_gru_encoder_is_the_rnn_seq2seq(attention, reverse_source):
    reference, assembled = models(attention, reverse_source)
    assert assembled.count_params() == reference.count_params()
    inputs = {"source": SOURCE, "target": TARGET}
    np.testing.assert_allclose(
        _numpy(assembled(inputs)), _numpy(reference(inputs)), atol=ATOL, rtol=0
    )


@pytest.mark.backend_agnostic
def test_decode_step_gives_the_teacher_forced_probabilities_and_greedy_decoding_runs():
    _, model = models()
    probabilities = _numpy(model({"source": SOURCE, "target": TARGET}))
    state = model.encode(SOURCE)
    tokens = np.ones(len(SOURCE), "int32")  # START
    for step in range(TARGET.shape[1]):
        log_probs, state, attention = model.decode_step(tokens, state)
        real = TARGET[:, step] != 0  # the teacher-forced pass outputs nothing at padding
        np.testing.assert_allclose(
            np.exp(_numpy(log_probs))[real], probabilities[real, step], atol=ATOL, rtol=0
        )
        # Attention is a distribution over the real source steps only.
        weights = _numpy(attention)
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
        assert np.all(weights[SOURCE == 0] == 0)
        tokens = TARGET[:, step]
    assert tuple(greedy_decode(model, SOURCE, 6).ids.shape) == (3, 6)


def test_it_saves_and_loads_with_safe_mode_and_gives_the_same_probabilities(tmp_path):
    _, model = models()
    inputs = {"source": SOURCE, "target": TARGET}
    path = tmp_path / "assembled.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is AssembledSeq2Seq
    assert set(loaded.get_config()) == {
        "source_vocab_size",
        "target_vocab_size",
        "encoder",
        "cell",
        "units",
        "num_layers",
        "attention",
        "attention_units",
        "input_feeding",
        "embedding_dim",
        "reverse_source",
        "dropout",
        "name",
        "trainable",
        "dtype",
    }
    np.testing.assert_allclose(_numpy(loaded(inputs)), _numpy(model(inputs)), atol=ATOL, rtol=0)


def test_an_encoder_that_does_not_fit_the_decoder_is_refused_naming_what_it_needs():
    without_state = bidirectional_gru_encoder(state=False)
    with pytest.raises(ValueError, match=r"a 'state' output .* without attention"):
        AssembledSeq2Seq(20, 30, without_state, cell="gru", units=16, attention=None)
    with pytest.raises(ValueError, match=r"'state' of shape \(batch, 32\).*got \(None, 16\)"):
        AssembledSeq2Seq(20, 30, bidirectional_gru_encoder(), units=32, attention="bahdanau")
    source = keras.Input((None,), dtype="int32")
    only_state = keras.Model(
        source, {"state": keras.layers.GRU(16)(keras.layers.Embedding(20, 4)(source))}
    )
    with pytest.raises(ValueError, match=r"a 'memory' output .* attention='bahdanau'"):
        AssembledSeq2Seq(20, 30, only_state, units=16, attention="bahdanau")
    not_a_dict = keras.Model(source, keras.layers.Embedding(20, 16)(source))
    with pytest.raises(ValueError, match="a dict of 'memory' and/or 'state'"):
        AssembledSeq2Seq(20, 30, not_a_dict, units=16, attention="bahdanau")
    with pytest.raises(ValueError, match="argument `encoder`"):
        AssembledSeq2Seq(20, 30, "encoder")
