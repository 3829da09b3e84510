"""RNNSeq2Seq and TransformerSeq2Seq: each takes its own arguments; `Seq2Seq` is only their base."""

import inspect

import pytest

from keras_seq.models import RNNSeq2Seq, Seq2Seq, TransformerSeq2Seq, seq2seq

# Under JAX building the models takes 10-15 s, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

agnostic = pytest.mark.backend_agnostic


@agnostic
def test_each_class_takes_only_its_own_arguments():
    rnn = set(inspect.signature(RNNSeq2Seq.__init__).parameters)
    transformer = set(inspect.signature(TransformerSeq2Seq.__init__).parameters)
    shared = {"self", "source_vocab_size", "target_vocab_size", "num_layers", "embedding_dim",
              "reverse_source", "dropout", "kwargs"}  # fmt: skip
    assert rnn - shared == {
        "cell",
        "units",
        "bidirectional",
        "attention",
        "attention_units",
        "input_feeding",
    }
    assert transformer - shared == {
        "num_heads",
        "ff_dim",
        "norm_first",
        "max_length",
        "positions",
    }
    assert "architecture" not in rnn | transformer


@agnostic
def test_the_factory_builds_the_class_of_each_architecture():
    rnn = seq2seq(17, 23, units=8, embedding_dim=6)
    transformer = seq2seq(17, 23, architecture="transformer", embedding_dim=8, num_heads=2)
    assert type(rnn) is RNNSeq2Seq and rnn.architecture == "rnn"
    assert type(transformer) is TransformerSeq2Seq and transformer.architecture == "transformer"
    assert isinstance(rnn, Seq2Seq) and isinstance(transformer, Seq2Seq)
    assert transformer.embedding_dim == 8 and rnn.embedding_dim == 6


@agnostic
def test_the_base_class_itself_is_refused_and_names_the_factory():
    with pytest.raises(TypeError, match=r"keras_seq\.models\.seq2seq\(\.\.\.\)"):
        Seq2Seq(17, 23)
