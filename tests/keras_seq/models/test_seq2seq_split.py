"""RNNSeq2Seq and TransformerSeq2Seq: their own arguments, and what keras_seq 0.1 wrote still loads.

keras_seq 0.1 had one `Seq2Seq` class for both architectures. The configs below are
written out as that class's `get_config` wrote them (every argument of both
architectures, and `architecture`), not produced by the code under test.
"""

import inspect
import json
import warnings
import zipfile

import keras
import numpy as np
import pytest

from keras_seq.models import RNNSeq2Seq, Seq2Seq, TransformerSeq2Seq, seq2seq

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

agnostic = pytest.mark.backend_agnostic

SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0]], "int32")
TARGET = np.array([[10, 11, 2, 0], [12, 2, 0, 0]], "int32")


def probabilities(model):
    return keras.ops.convert_to_numpy(model.predict_on_batch({"source": SOURCE, "target": TARGET}))


def single_class_config(**changes):
    """A config of keras_seq 0.1's `Seq2Seq`, its defaults spelled out."""
    config = {
        "source_vocab_size": 17,
        "target_vocab_size": 23,
        "architecture": "rnn",
        "cell": "lstm",
        "units": 64,
        "num_layers": 1,
        "bidirectional": False,
        "attention": None,
        "attention_units": None,
        "input_feeding": False,
        "reverse_source": False,
        "embedding_dim": 64,
        "embed_dim": 64,
        "num_heads": 4,
        "ff_dim": 128,
        "norm_first": False,
        "max_length": 128,
        "positions": "sinusoidal",
        "dropout": 0.0,
        "name": "seq2seq",
        "trainable": True,
        "dtype": {
            "module": "keras",
            "class_name": "DTypePolicy",
            "config": {"name": "float32"},
            "registered_name": None,
        },
    }
    config.update(changes)
    return config


OLD_CONFIGS = {
    "rnn": single_class_config(
        cell="gru", units=8, attention="bahdanau", embedding_dim=6, embed_dim=32, num_heads=3
    ),
    "transformer": single_class_config(
        architecture="transformer",
        num_layers=2,
        embedding_dim=6,  # ignored by the old Transformer
        embed_dim=8,
        num_heads=2,
        ff_dim=16,
        max_length=12,
        positions="learned",
        norm_first=True,
        units=7,  # ignored by the old Transformer
    ),
}


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
@pytest.mark.parametrize("architecture", OLD_CONFIGS)
def test_a_single_class_config_builds_the_subclass_with_the_same_arguments(architecture):
    old = OLD_CONFIGS[architecture]
    model = Seq2Seq.from_config(old)
    config = model.get_config()
    if architecture == "rnn":
        assert type(model) is RNNSeq2Seq
        assert (config["cell"], config["units"], config["attention"]) == ("gru", 8, "bahdanau")
        assert config["embedding_dim"] == 6
    else:
        assert type(model) is TransformerSeq2Seq
        assert config["embedding_dim"] == 8  # the old `embed_dim`
        assert (config["num_layers"], config["ff_dim"], config["positions"]) == (2, 16, "learned")
        assert model.max_decode_length == 12


def _rewrite_as_single_class_file(path, old_config):
    """The .keras file at `path` with its model config replaced by keras_seq 0.1's."""
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    saved = json.loads(entries["config.json"])
    saved.update(
        module="keras_seq.models.seq2seq",
        class_name="Seq2Seq",
        registered_name="keras_seq>Seq2Seq",
        config=old_config,
    )
    entries["config.json"] = json.dumps(saved).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("architecture", OLD_CONFIGS)
def test_a_keras_file_of_the_single_class_still_loads_with_its_weights(architecture, tmp_path):
    old = OLD_CONFIGS[architecture]
    # The same architecture as the new class, to write its weights into the old-style file.
    kwargs = {key: value for key, value in old.items() if key not in ("dtype", "trainable")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = seq2seq(kwargs.pop("source_vocab_size"), kwargs.pop("target_vocab_size"), **kwargs)
    path = tmp_path / "single_class.keras"
    model.save(path)
    _rewrite_as_single_class_file(path, old)

    reloaded = keras.saving.load_model(path, safe_mode=True)
    assert type(reloaded) is type(model)
    np.testing.assert_allclose(probabilities(reloaded), probabilities(model), atol=1e-6)


@agnostic
def test_the_single_class_call_still_builds_the_subclass_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="Seq2Seq"):
        model = Seq2Seq(17, 23, "transformer", embed_dim=8, num_heads=2, units=5)
    assert type(model) is TransformerSeq2Seq and model.embedding_dim == 8
    with pytest.warns(DeprecationWarning, match="Seq2Seq"):
        model = Seq2Seq(17, 23, units=8, attention="luong_dot", trainable=False)
    assert type(model) is RNNSeq2Seq and model.units == 8 and not model.trainable


@agnostic
def test_the_old_embed_dim_argument_of_the_factory_still_sets_the_transformer_width():
    with pytest.warns(DeprecationWarning, match="embed_dim"):
        model = seq2seq(17, 23, architecture="transformer", embed_dim=8, num_heads=2)
    assert model.embedding_dim == 8
    with pytest.warns(DeprecationWarning, match="embed_dim"):
        model = seq2seq(17, 23, embedding_dim=6, embed_dim=8)  # the RNN ignored it
    assert model.embedding_dim == 6
