"""Seq2Seq: the teacher-forced pass, the encode/decode_step contract, masks, saving, learning."""

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedTokenAccuracy
from keras_seq.models import compile_for, seq2seq
from keras_seq.models.seq2seq_base import PAD_ID, START_ID
from keras_seq.tasks.base import TargetSpec
from keras_seq.testing.layer_checks import IN_PROCESS_CHECKS, LayerCase, check_layer

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")
agnostic = pytest.mark.backend_agnostic

SOURCE_VOCAB, TARGET_VOCAB = 17, 23
BATCH, S, T = 4, 7, 6
END_ID = 2

CONFIGS = {
    "fixed_vector_lstm": {},
    "bahdanau_gru_bidirectional": {"attention": "bahdanau", "cell": "gru", "bidirectional": True},
    "luong_dot_simple_two_layers": {"attention": "luong_dot", "cell": "simple", "num_layers": 2},
    "luong_general_input_feeding": {"attention": "luong_general", "input_feeding": True},
    "luong_concat_cec_lstm_reversed": {
        "attention": "luong_concat",
        "cell": "cec_lstm",
        "reverse_source": True,
    },
    "transformer_sinusoidal": {"architecture": "transformer", "embedding_dim": 8},
    "transformer_learned_pre_ln": {
        "architecture": "transformer",
        "embedding_dim": 8,
        "positions": "learned",
        "norm_first": True,
        "num_layers": 2,
    },
}


def make(name, **overrides):
    config = {"embedding_dim": 6, **CONFIGS[name], **overrides}
    return seq2seq(
        SOURCE_VOCAB,
        TARGET_VOCAB,
        units=8,
        num_heads=2,
        ff_dim=16,
        max_length=12,
        **config,
    )


def sample(seed):
    """Sources of 7, 4, 1 and 5 tokens; targets of 5, 2, 0 and 3 tokens, then END, then PAD."""
    rng = np.random.default_rng(seed)
    source = rng.integers(4, SOURCE_VOCAB, size=(BATCH, S)).astype("int32")
    target = rng.integers(4, TARGET_VOCAB, size=(BATCH, T)).astype("int32")
    for row, (s_len, t_len) in enumerate([(7, 5), (4, 2), (1, 0), (5, 3)]):
        source[row, s_len:] = PAD_ID
        target[row, t_len] = END_ID
        target[row, t_len + 1 :] = PAD_ID
    return source, target


def numpy_reverse_within_length(ids):
    """Each row's tokens before the first PAD, reversed; the padding left at the end."""
    out = ids.copy()
    for row in out:
        length = int(np.sum(row != PAD_ID))
        row[:length] = row[:length][::-1]
    return out


def probabilities(model, source, target):
    return keras.ops.convert_to_numpy(model.predict_on_batch({"source": source, "target": target}))


def traced(model):
    """`encode` and `decode_step` compiled by the backend (tf.function or jax.jit)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(model.encode), tf.function(model.decode_step)
    if backend == "jax":
        import jax

        return jax.jit(model.encode), jax.jit(model.decode_step)
    return model.encode, model.decode_step


def to_numpy(tree):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, tree)


# === The inference contract ===================================================


def on_jax_too(names, agnostic_names):
    """Parameters `names`, those in `agnostic_names` also run under JAX (kept few: JAX
    compiles each new shape anew)."""
    return [pytest.param(n, marks=agnostic) if n in agnostic_names else n for n in names]


@pytest.mark.parametrize(
    "name",
    on_jax_too(
        CONFIGS,
        {"bahdanau_gru_bidirectional", "transformer_learned_pre_ln"},
    ),
)
def test_decode_step_reproduces_the_teacher_forced_probabilities(name):
    """Fed the target tokens one by one, the compiled decode_step gives call's numbers."""
    model = make(name)
    source, target = sample(0)
    expected = probabilities(model, source, target)  # (batch, T, vocab)
    encode, decode_step = traced(model)

    state = encode(source)
    first = to_numpy(state)
    previous = np.concatenate([np.full((BATCH, 1), START_ID), target[:, :-1]], axis=1)
    for t in range(T):
        log_probs, state, attention = decode_step(previous[:, t].astype("int32"), state)
        log_probs, attention = keras.ops.convert_to_numpy(log_probs), to_numpy(attention)
        real = target[:, t] != PAD_ID
        np.testing.assert_allclose(np.exp(log_probs[real]), expected[real, t], atol=1e-5)
        assert log_probs.dtype == np.float32 and log_probs.shape == (BATCH, TARGET_VOCAB)

        # Attention over the source: zero on padding, a distribution otherwise.
        assert attention.dtype == np.float32 and attention.shape == (BATCH, S)
        source_mask = source != PAD_ID
        if model.reverse_source:
            source_mask = numpy_reverse_within_length(source) != PAD_ID
        np.testing.assert_array_equal(attention[~source_mask], 0.0)
        sums = attention.sum(axis=1)
        if model.architecture == "rnn" and model.attention is None:
            np.testing.assert_array_equal(sums, 0.0)
        else:
            np.testing.assert_allclose(sums, 1.0, atol=1e-5)

        # The state keeps its keys, shapes and dtypes, batch first.
        now = to_numpy(state)
        assert sorted(now) == sorted(first)
        for key in first:
            assert now[key].shape == first[key].shape and now[key].dtype == first[key].dtype
            assert now[key].shape[0] == BATCH, key


def test_eager_and_traced_decoding_agree():
    model = make("bahdanau_gru_bidirectional")
    source, _ = sample(1)
    tokens = np.full((BATCH,), START_ID, "int32")
    eager = to_numpy(model.decode_step(tokens, model.encode(source)))
    encode, decode_step = traced(model)
    compiled = to_numpy(decode_step(tokens, encode(source)))
    for a, b in zip(keras.tree.flatten(eager), keras.tree.flatten(compiled), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_transformer_state_is_a_key_value_cache_and_a_step_counter():
    model = make("transformer_learned_pre_ln")  # two decoder blocks
    source, _ = sample(2)
    state = model.encode(source)
    d_k = 8 // 2  # embedding_dim / num_heads
    for index in range(2):
        assert to_numpy(state[f"cross_keys_{index}"]).shape == (BATCH, S, 2, d_k)
        assert to_numpy(state[f"self_values_{index}"]).shape == (BATCH, 12, 2, d_k)
    for expected_step, token in enumerate([START_ID, 9, 11]):
        assert np.all(to_numpy(state["step"]) == expected_step)
        _, state, _ = model.decode_step(np.full((BATCH,), token, "int32"), state)
    # Three positions written into each block's cache, the rest still empty.
    keys = to_numpy(state["self_keys_1"])
    assert np.all(np.any(keys[:, :3] != 0.0, axis=(2, 3)))
    assert np.all(keys[:, 3:] == 0.0)
    assert model.max_decode_length == 12 and make("fixed_vector_lstm").max_decode_length is None


# === Masks ====================================================================


@pytest.mark.parametrize(
    "name",
    on_jax_too(
        ["fixed_vector_lstm", "bahdanau_gru_bidirectional", "transformer_sinusoidal"],
        {"bahdanau_gru_bidirectional"},
    ),
)
def test_padding_changes_nothing(name):
    """More PAD columns on the source or the target leave every real probability as it was,
    and a sentence gets the same probabilities alone as in a batch."""
    model = make(name)
    source, target = sample(3)
    expected = probabilities(model, source, target)
    real = target != PAD_ID
    longer_source = np.pad(source, ((0, 0), (0, 3)))
    np.testing.assert_allclose(
        probabilities(model, longer_source, target)[real], expected[real], atol=1e-5
    )
    longer_target = np.pad(target, ((0, 0), (0, 2)))
    np.testing.assert_allclose(
        probabilities(model, source, longer_target)[:, :T][real], expected[real], atol=1e-5
    )
    alone = probabilities(model, source[1:2, :4], target[1:2, :3])  # row 1, trimmed
    np.testing.assert_allclose(alone[0][real[1, :3]], expected[1, :3][real[1, :3]], atol=1e-5)


@pytest.mark.parametrize(
    "name",
    on_jax_too(
        ["luong_general_input_feeding", "transformer_sinusoidal"], {"luong_general_input_feeding"}
    ),
)
def test_reverse_source_is_the_same_model_reading_reversed_sources(name):
    """With the same weights, reverse_source=True on x equals reverse_source=False on the
    NumPy reversal of x, in the training pass and in encode/decode_step."""
    plain = make(name)
    reversing = make(name, reverse_source=True)
    reversing.set_weights(plain.get_weights())
    source, target = sample(4)
    flipped = numpy_reverse_within_length(source)
    np.testing.assert_allclose(
        probabilities(reversing, source, target), probabilities(plain, flipped, target), atol=1e-5
    )
    tokens = np.full((BATCH,), START_ID, "int32")
    encode_a, decode_step_a = traced(reversing)
    encode_b, decode_step_b = traced(plain)
    step_a = to_numpy(decode_step_a(tokens, encode_a(source))[0])
    step_b = to_numpy(decode_step_b(tokens, encode_b(flipped))[0])
    np.testing.assert_allclose(step_a, step_b, atol=1e-5)


@pytest.mark.parametrize("name", ["bahdanau_gru_bidirectional", "transformer_sinusoidal"])
def test_a_source_of_padding_only_gives_finite_probabilities(name):
    model = make(name)
    source, target = sample(12)
    source[0] = PAD_ID
    probs = probabilities(model, source, target)
    assert np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    log_probs, _, attention = model.decode_step(np.full((BATCH,), START_ID), model.encode(source))
    assert np.all(np.isfinite(to_numpy(log_probs)))
    np.testing.assert_array_equal(to_numpy(attention)[0], 0.0)


# === ReverseWithinLength ======================================================


@agnostic
def test_reverse_within_length_keeps_padding_at_the_end_and_round_trips():
    rng = np.random.default_rng(5)
    ids = rng.integers(4, 50, size=(16, 9)).astype("int32")
    for row, length in zip(ids, rng.integers(0, 10, size=16), strict=True):
        row[length:] = PAD_ID
    layer = layers.ReverseWithinLength()
    once = keras.ops.convert_to_numpy(layer(ids))
    np.testing.assert_array_equal(once, numpy_reverse_within_length(ids))
    np.testing.assert_array_equal(once == PAD_ID, ids == PAD_ID)  # padding where it was
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(once)), ids)


@agnostic
def test_reverse_within_length_reverses_the_unmasked_steps_of_any_mask():
    x = np.arange(1, 7, dtype="float32").reshape(1, 6, 1) * np.ones((1, 1, 2), "float32")
    mask = np.array([[False, True, True, False, True, False]])  # real steps 1, 2, 4
    out = keras.ops.convert_to_numpy(layers.ReverseWithinLength()(x, mask=mask))
    np.testing.assert_array_equal(out[0, :, 0], [1, 5, 3, 4, 2, 6])


@agnostic
def test_reverse_within_length_refuses_a_non_numeric_pad_value():
    with pytest.raises(ValueError, match="argument `pad_value`, expected a finite number"):
        layers.ReverseWithinLength(pad_value="pad")


# Its saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    "reverse_within_length": LayerCase(
        make=lambda **kw: layers.ReverseWithinLength(**kw), features=3
    ),
}


def test_reverse_within_length_passes_in_process_layer_checks(tmp_path):
    check_layer(SAVED_CASES["reverse_within_length"], tmp_path, checks=IN_PROCESS_CHECKS)


# === Loss and metric ==========================================================


def numpy_random_probabilities(rng, shape):
    logits = rng.normal(size=shape)
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return (exp / exp.sum(-1, keepdims=True)).astype("float32")


@agnostic
def test_masked_loss_is_the_mean_negative_log_likelihood_of_the_real_tokens():
    rng = np.random.default_rng(6)
    _, target = sample(6)
    probs = numpy_random_probabilities(rng, (BATCH, T, TARGET_VOCAB))
    real = target != PAD_ID
    picked = np.take_along_axis(probs, target[..., None], axis=-1)[..., 0]
    expected = -np.log(picked[real]).mean()
    loss = MaskedSparseCategoricalCrossentropy()
    assert float(loss(target, probs)) == pytest.approx(expected, rel=1e-5)

    weights = np.array([1.0, 0.5, 2.0, 0.0], "float32")
    weighted = -(np.log(picked) * weights[:, None] * real).sum() / real.sum()
    assert float(loss(target, probs, sample_weight=weights)) == pytest.approx(weighted, rel=1e-5)

    scrambled = probs.copy()
    scrambled[~real] = numpy_random_probabilities(rng, (int((~real).sum()), TARGET_VOCAB))
    assert float(loss(target, scrambled)) == pytest.approx(expected, rel=1e-5)


@agnostic
def test_masked_token_accuracy_counts_every_real_token_once_across_batches():
    rng = np.random.default_rng(7)
    metric = MaskedTokenAccuracy()
    hits = total = 0
    for seed in (8, 9):
        _, target = sample(seed)
        probs = numpy_random_probabilities(rng, (BATCH, T, TARGET_VOCAB))
        real = target != PAD_ID
        hits += int(((probs.argmax(-1) == target) & real).sum())
        total += int(real.sum())
        metric.update_state(target, probs)
    assert float(metric.result()) == pytest.approx(hits / total, rel=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0


@pytest.mark.large
@pytest.mark.parametrize("name", ["luong_general_input_feeding", "transformer_sinusoidal"])
def test_compile_for_reports_the_masked_loss_and_trains(name):
    """compile_for(kind "sequence") reports the NumPy masked loss and accuracy, and `fit`
    lowers the loss. (XLA training, the default on GPUs, is the decoder's `jit_fit_step`
    check in tests/keras_seq/layers/test_recurrent_decoder.py.)"""
    model = make(name)
    compile_for(model, TargetSpec("sequence", vocab_size=TARGET_VOCAB, length=T))
    source, target = np.concatenate([sample(10)[0]] * 4), np.concatenate([sample(10)[1]] * 4)
    inputs = {"source": source, "target": target}

    probs = probabilities(model, source, target)
    real = target != PAD_ID
    picked = np.take_along_axis(probs, target[..., None], axis=-1)[..., 0]
    result = model.evaluate(inputs, target, batch_size=len(target), verbose=0, return_dict=True)
    assert result["loss"] == pytest.approx(-np.log(picked[real]).mean(), rel=1e-4)
    accuracy = ((probs.argmax(-1) == target) & real).sum() / real.sum()
    assert result["token_accuracy"] == pytest.approx(accuracy, rel=1e-5)

    before = [np.copy(w) for w in model.get_weights()]
    history = model.fit(inputs, target, batch_size=8, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert history.history["loss"][-1] < history.history["loss"][0]
    changed = [not np.allclose(b, a) for b, a in zip(before, model.get_weights(), strict=True)]
    assert sum(changed) > len(changed) // 2


# === Configuration and saving =================================================


@agnostic
@pytest.mark.parametrize(
    "name, overrides",
    [
        ("bahdanau_gru_bidirectional", {"dropout": 0.25, "attention_units": 5}),
        ("transformer_learned_pre_ln", {"dropout": 0.25}),
    ],
)
def test_config_holds_exactly_the_constructor_arguments(name, overrides):
    import inspect

    model = make(name, **overrides)
    cls = type(model)
    config = model.get_config()
    json.dumps(config)
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    assert set(config) == parameters | {"name", "trainable", "dtype"}
    restored = cls.from_config(config)
    assert restored.get_config() == config
    assert len(restored.get_weights()) == len(model.get_weights())


@pytest.mark.parametrize("name", ["luong_general_input_feeding", "transformer_sinusoidal"])
def test_mixed_precision_computes_in_float16_and_returns_float32(name):
    full = make(name)
    half = make(name, dtype="mixed_float16")
    half.set_weights(full.get_weights())
    source, target = sample(13)
    probs = probabilities(half, source, target)
    assert probs.dtype == np.float32
    np.testing.assert_allclose(probs, probabilities(full, source, target), atol=2e-2)
    assert half.get_layer("output_projection").compute_dtype == "float16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in half.weights)
    log_probs, _, attention = half.decode_step(np.full((BATCH,), START_ID), half.encode(source))
    assert to_numpy(log_probs).dtype == np.float32 and to_numpy(attention).dtype == np.float32
    assert type(half).from_config(half.get_config()).dtype_policy.name == "mixed_float16"


@pytest.mark.large
def test_seq2seq_reloads_with_safe_mode_in_a_fresh_process(tmp_path):
    """Saved compiled, reloaded in a new interpreter that imports keras_seq: same probabilities
    and the same first decoding step."""
    source, target = sample(11)
    tokens = np.full((BATCH,), START_ID, "int32")
    arrays = {"source": source, "target": target}
    for name in ("luong_concat_cec_lstm_reversed", "transformer_learned_pre_ln"):
        model = make(name, dropout=0.1)
        compile_for(model, TargetSpec("sequence", vocab_size=TARGET_VOCAB, length=T))
        model.save(tmp_path / f"{name}.keras")
        arrays[f"{name}__probs"] = probabilities(model, source, target)
        arrays[f"{name}__step"] = to_numpy(model.decode_step(tokens, model.encode(source))[0])
    np.savez(tmp_path / "expected.npz", **arrays)
    script = f"""
        import numpy as np, keras
        import keras_seq  # registers the classes
        from keras_seq.models import Seq2Seq
        data = np.load({str(tmp_path / "expected.npz")!r})
        for name in ("luong_concat_cec_lstm_reversed", "transformer_learned_pre_ln"):
            model = keras.saving.load_model({str(tmp_path)!r} + f"/{{name}}.keras", safe_mode=True)
            assert isinstance(model, Seq2Seq) and model.loss is not None
            probs = model.predict_on_batch({{"source": data["source"], "target": data["target"]}})
            np.testing.assert_allclose(probs, data[name + "__probs"], atol=1e-5)
            tokens = np.full((len(data["source"]),), {START_ID}, "int32")
            step = model.decode_step(tokens, model.encode(data["source"]))[0]
            np.testing.assert_allclose(keras.ops.convert_to_numpy(step), data[name + "__step"],
                                       atol=1e-5)
        print("reloaded")
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "reloaded" in result.stdout, result.stderr[-3000:]


@agnostic
def test_reserved_ids_are_the_vocabulary_s():
    from keras_seq.tasks.vocabulary import Vocabulary

    assert (PAD_ID, START_ID, END_ID) == (Vocabulary.PAD, Vocabulary.START, Vocabulary.END)


@agnostic
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": -3}, "argument `units`, expected a positive integer"),
        ({"architecture": "cnn"}, "argument `architecture`"),
        ({"attention": "luong"}, "argument `attention`"),
        ({"attention": "bahdanau", "input_feeding": True}, "argument `input_feeding`"),
        ({"bidirectional": True, "units": 7}, "argument `units`, expected an even number"),
        ({"attention": None, "attention_units": 8}, "argument `attention_units`"),
        ({"architecture": "transformer", "attention": "bahdanau"}, "argument `attention`"),
        ({"architecture": "transformer", "bidirectional": True}, "argument `bidirectional`"),
        ({"architecture": "transformer", "num_heads": 3}, "argument `num_heads`"),
        ({"positions": "rotary"}, "argument `positions`"),
        ({"dropout": 1.0}, "argument `dropout`"),
        ({"reverse_source": 1}, "argument `reverse_source`"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        seq2seq(SOURCE_VOCAB, TARGET_VOCAB, **kwargs)


@agnostic
def test_vocabularies_and_inputs_are_checked():
    with pytest.raises(ValueError, match="argument `source_vocab_size`, expected an integer"):
        seq2seq(3, TARGET_VOCAB)
    with pytest.raises(ValueError, match="expects a dict"):
        make("fixed_vector_lstm")({"source": sample(0)[0]})


# === Learning =================================================================


@pytest.mark.large
def test_attention_model_learns_to_reverse_sequences():
    """Bahdanau attention, 32 LSTM units, 2,000 training sequences of 1-10 symbols (8 symbols),
    5 epochs: greedy decoding reverses every validation sequence exactly.

    Measured on 2 busy CPU cores (about 20 s of training): exact match 1.0 for seeds 0, 1
    and 2 (the fixed-vector model of the same size, same budget: 0.62 for seed 0). The
    test asks for 0.95.
    """
    from keras_seq.models.decoding import compile_decoder
    from keras_seq.tasks import reverse

    keras.utils.set_random_seed(0)
    task = reverse(10, 2500, vocab_size=8, seed=0)
    model = seq2seq(
        len(task.source_vocabulary),
        len(task.target_vocabulary),
        attention="bahdanau",
        units=32,
        embedding_dim=16,
    )
    compile_for(model, task.targets)
    model.fit(
        {"source": task.x_train, "target": task.y_train},
        task.y_train,
        batch_size=32,
        epochs=5,
        verbose=0,
    )
    decode = compile_decoder(model, task.y_val.shape[1])
    ids = keras.ops.convert_to_numpy(decode(task.x_val).ids)
    exact = np.mean(np.all(ids == task.y_val, axis=1))
    assert exact >= 0.95, f"exact match {exact:.3f}"


def test_docstring_examples_run():
    import doctest

    modules = [
        sys.modules[name]
        for name in (
            "keras_seq.layers.reverse_within_length",
            "keras_seq.layers.recurrent_decoder",
            "keras_seq.models.seq2seq",
            "keras_seq.models.seq2seq_base",
            "keras_seq.models.rnn_seq2seq",
            "keras_seq.models.transformer_seq2seq",
            "keras_seq.losses",
            "keras_seq.metrics.masked_token_accuracy",
        )
    ]
    for module in modules:
        globs = {"np": np, "keras": keras, **vars(module)}
        result = doctest.testmod(module, globs=globs, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__
