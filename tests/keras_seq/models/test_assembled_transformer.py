"""AssembledTransformerSeq2Seq: the Transformer's decoder blocks over an encoder of one's own.

The reference is `TransformerSeq2Seq`, whose blocks are checked against NumPy versions
of the paper's equations elsewhere: an encoder assembled from the same layers (the
source embedding scaled by √d_model, the positions, the encoder blocks, the final norm
of a pre-LN stack), given the same weights (matched by path), must give the same
probabilities. Both run the same float32 kernels in the same order, so they agree to
1e-6.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest

from keras_seq.layers import SinusoidalPositionalEncoding, TransformerEncoderBlock
from keras_seq.models import AssembledTransformerSeq2Seq, TransformerSeq2Seq, greedy_decode

# Under JAX each test compiles its models with XLA, seconds each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

ATOL = 1e-6  # see the module docstring
SOURCE = np.array([[5, 6, 7, 0, 0], [4, 9, 9, 9, 3], [8, 0, 0, 0, 0]])
TARGET = np.array([[8, 9, 2, 0], [7, 7, 7, 2], [6, 2, 0, 0]])
ARGUMENTS = {"num_layers": 2, "num_heads": 2, "ff_dim": 16, "max_length": 8}


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def transformer_encoder(width, norm_first, vocab=20):
    """The reference's encoder as a functional model, its layers named as the reference's."""
    source = keras.Input((None,), dtype="int32", name="source")
    x = keras.layers.Embedding(vocab, width, mask_zero=True, name="source_embedding")(source)
    x = keras.layers.Rescaling(math.sqrt(width))(x)
    x = SinusoidalPositionalEncoding()(x)
    for index in range(ARGUMENTS["num_layers"]):
        x = TransformerEncoderBlock(
            num_heads=2, ff_dim=16, norm_first=norm_first, name=f"encoder_block_{index}"
        )(x)
    if norm_first:
        x = keras.layers.LayerNormalization(epsilon=1e-5, name="encoder_layer_norm")(x)
    return keras.Model(source, {"memory": x})


@pytest.mark.backend_agnostic
@pytest.mark.parametrize(("norm_first", "reverse_source"), [(True, False), (False, True)])
def test_an_assembled_transformer_encoder_is_the_transformer_seq2seq(norm_first, reverse_source):
    options = {**ARGUMENTS, "norm_first": norm_first, "reverse_source": reverse_source}
    reference = TransformerSeq2Seq(20, 30, embedding_dim=8, **options)
    encoder = transformer_encoder(8, norm_first)
    assembled = AssembledTransformerSeq2Seq(20, 30, encoder, embedding_dim=8, **options)
    assert assembled.count_params() == reference.count_params()
    rng = np.random.default_rng(0)
    for weight in reference.weights:  # random values, biases and norms too; the same by path
        weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    values = {weight.path: weight for weight in reference.weights}
    for weight in assembled.weights:
        weight.assign(values[weight.path])
    inputs = {"source": SOURCE, "target": TARGET}
    np.testing.assert_allclose(
        _numpy(assembled(inputs)), _numpy(reference(inputs)), atol=ATOL, rtol=0
    )


@pytest.mark.backend_agnostic
def test_decode_step_over_a_wider_memory_gives_the_teacher_forced_probabilities():
    # The encoder's memory has 12 features, the decoder 8: the cross-attention projects it.
    model = AssembledTransformerSeq2Seq(
        20, 30, transformer_encoder(12, True), embedding_dim=8, norm_first=True, **ARGUMENTS
    )
    probabilities = _numpy(model({"source": SOURCE, "target": TARGET}))
    state = model.encode(SOURCE)
    tokens = np.ones(len(SOURCE), "int32")  # START
    for step in range(TARGET.shape[1]):
        log_probs, state, attention = model.decode_step(tokens, state)
        real = TARGET[:, step] != 0  # the teacher-forced pass outputs nothing at padding
        np.testing.assert_allclose(
            np.exp(_numpy(log_probs))[real], probabilities[real, step], atol=1e-5, rtol=0
        )
        assert np.all(_numpy(attention)[SOURCE == 0] == 0)  # never on the padding
        tokens = TARGET[:, step]
    assert tuple(greedy_decode(model, SOURCE, 6).ids.shape) == (3, 6)


def test_it_saves_and_loads_with_safe_mode_and_gives_the_same_probabilities(tmp_path):
    model = AssembledTransformerSeq2Seq(
        20, 30, transformer_encoder(8, False), embedding_dim=8, positions="learned", **ARGUMENTS
    )
    inputs = {"source": SOURCE, "target": TARGET}
    path = tmp_path / "assembled.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is AssembledTransformerSeq2Seq
    assert set(loaded.get_config()) == {
        "source_vocab_size",
        "target_vocab_size",
        "encoder",
        "num_layers",
        "embedding_dim",
        "num_heads",
        "ff_dim",
        "norm_first",
        "max_length",
        "positions",
        "reverse_source",
        "dropout",
        "name",
        "trainable",
        "dtype",
    }
    np.testing.assert_allclose(_numpy(loaded(inputs)), _numpy(model(inputs)), atol=ATOL, rtol=0)


def test_an_encoder_without_memory_or_heads_that_do_not_divide_are_refused():
    source = keras.Input((None,), dtype="int32")
    only_state = keras.Model(
        source, {"state": keras.layers.GRU(8)(keras.layers.Embedding(20, 4)(source))}
    )
    with pytest.raises(ValueError, match=r"a 'memory' output .* cross-attention"):
        AssembledTransformerSeq2Seq(20, 30, only_state, embedding_dim=8)
    with pytest.raises(ValueError, match=r"`num_heads`.*divisor of embedding_dim=8"):
        AssembledTransformerSeq2Seq(
            20, 30, transformer_encoder(8, False), num_heads=3, embedding_dim=8
        )
