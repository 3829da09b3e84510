"""RecurrentDecoder against NumPy versions of the Bahdanau and Luong decoder equations."""

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.testing.layer_checks import LayerCase, LayerInput
from tests.keras_seq.layers.shared_checks import in_process_check_tests

# Every test runs under JAX and PyTorch too; the shared in-process checks there on one case, for
# time (the saved-file check: tests/keras_seq/test_saved_layers.py).
agnostic = pytest.mark.backend_agnostic

BATCH, T, S, D_IN, D_ENC, UNITS = 3, 4, 5, 3, 6, 5


# === NumPy versions of the papers' equations ================================


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_gru(x, h, kernel, recurrent_kernel, bias):
    """The GRU of Cho et al. (2014), reset gate applied after the recurrent product
    (the cuDNN form, Keras's `reset_after=True`); gate blocks z, r, h:

        z = σ(x W_z + b_z + h U_z + b'_z),   r = σ(x W_r + b_r + h U_r + b'_r)
        h̃ = tanh(x W_h + b_h + r ⊙ (h U_h + b'_h)),   h' = z ⊙ h + (1 − z) ⊙ h̃
    """
    u = h.shape[-1]
    block = {name: slice(i * u, (i + 1) * u) for i, name in enumerate("zrh")}
    from_x = {g: x @ kernel[:, s] + bias[0, s] for g, s in block.items()}
    from_h = {g: h @ recurrent_kernel[:, s] + bias[1, s] for g, s in block.items()}
    z = sigmoid(from_x["z"] + from_h["z"])
    r = sigmoid(from_x["r"] + from_h["r"])
    candidate = np.tanh(from_x["h"] + r * from_h["h"])
    return z * h + (1.0 - z) * candidate


def numpy_lstm(x, h, c, kernel, recurrent_kernel, bias):
    """The LSTM with a forget gate (Gers et al. 2000); gate blocks i, f, c, o."""
    u = h.shape[-1]
    z = x @ kernel + h @ recurrent_kernel + bias
    i, f, g, o = (z[:, k * u : (k + 1) * u] for k in range(4))
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c), c


def numpy_simple_rnn(x, h, kernel, recurrent_kernel, bias):
    """Elman's RNN: h' = tanh(x W + h U + b)."""
    return np.tanh(x @ kernel + h @ recurrent_kernel + bias)


def numpy_softmax_over(scores, valid):
    """softmax over the valid positions; 0 elsewhere."""
    weights = np.zeros_like(scores)
    z = np.exp(scores[valid] - scores[valid].max())
    weights[valid] = z / z.sum()
    return weights


def numpy_bahdanau_decoder(x, memory, memory_mask, s0, cells, attention):
    """Bahdanau et al. (2015), Section 3.1 and Appendix A.1.2, with stacked GRUs.

        e_tj = v_aᵀ tanh(W_a s_{t−1} + U_a h_j),   α_t = softmax(e_t),   c_t = Σ α_tj h_j
        s_t = GRU([y_{t−1}; c_t], s_{t−1}),   output [s_t; c_t]

    `s_{t−1}` is the top layer's state; the context enters the first layer.
    """
    w_a = attention["query_projection"].T  # (n', n)
    u_a = attention["key_projection"].T  # (n', 2n)
    v_a = attention["score_vector"]
    outputs, alphas = np.zeros((BATCH, T, UNITS + D_ENC)), np.zeros((BATCH, T, S))
    for b in range(BATCH):
        states = [s[b : b + 1] for s in s0]
        for t in range(T):
            e = np.array(
                [v_a @ np.tanh(w_a @ states[-1][0] + u_a @ memory[b, j]) for j in range(S)]
            )
            alpha = numpy_softmax_over(e, memory_mask[b])
            context = alpha @ memory[b]
            layer_input = np.concatenate([x[b, t], context])[None]
            for layer, weights in enumerate(cells):
                states[layer] = numpy_gru(layer_input, states[layer], *weights)
                layer_input = states[layer]
            outputs[b, t] = np.concatenate([states[-1][0], context])
            alphas[b, t] = alpha
    return outputs, alphas


def numpy_luong_score(score, h_t, h_s, attention):
    """Luong et al. (2015), Section 3.1: the dot, general and concat scores."""
    if score == "dot":
        return h_t @ h_s
    if score == "general":
        w_a = attention["key_projection"].T  # stored as (d_k, d_q)
        return h_t @ w_a @ h_s
    w_a = np.concatenate([attention["query_projection"], attention["key_projection"]]).T
    return attention["score_vector"] @ np.tanh(w_a @ np.concatenate([h_t, h_s]))


def numpy_luong_decoder(score, input_feeding, x, memory, memory_mask, h0, c0, cell, attention, w_c):
    """Luong et al. (2015), Sections 3 and 3.3, with an LSTM:

    h_t = LSTM(x_t, h_{t−1})   ([x_t; h̃_{t−1}] with input feeding, h̃_0 = 0)
    a_t = softmax(score(h_t, h̄_s)),   c_t = Σ a_ts h̄_s,   h̃_t = tanh(W_c [c_t; h_t])
    """
    outputs, alphas = np.zeros((BATCH, T, UNITS)), np.zeros((BATCH, T, S))
    for b in range(BATCH):
        h, c, attentional = h0[b : b + 1], c0[b : b + 1], np.zeros((1, UNITS))
        for t in range(T):
            step_input = x[b, t][None]
            if input_feeding:
                step_input = np.concatenate([step_input, attentional], axis=1)
            h, c = numpy_lstm(step_input, h, c, *cell)
            e = np.array(
                [numpy_luong_score(score, h[0], memory[b, s], attention) for s in range(S)]
            )
            alpha = numpy_softmax_over(e, memory_mask[b])
            context = alpha @ memory[b]
            attentional = np.tanh(w_c @ np.concatenate([context, h[0]]))[None]
            outputs[b, t] = attentional[0]
            alphas[b, t] = alpha
    return outputs, alphas


# === Helpers ==================================================================


def randomise(layer, seed):
    """Random weights everywhere (biases included), so that no term can hide."""
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.normal(scale=0.5, size=w.shape) for w in layer.get_weights()])


def as_numpy(weights):
    return {w.path.split("/")[-1]: keras.ops.convert_to_numpy(w) for w in weights}


def cell_weights(cell):
    return [keras.ops.convert_to_numpy(w) for w in (cell.kernel, cell.recurrent_kernel, cell.bias)]


def sample(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, T, D_IN)).astype("float32")
    memory = rng.normal(size=(BATCH, S, D_ENC)).astype("float32")
    memory_mask = np.array([[True] * S, [True] * 3 + [False] * 2, [True] + [False] * 4])
    states = [rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(4)]
    return x, memory, memory_mask, states


def numpy_of(tensors):
    return [keras.ops.convert_to_numpy(t) for t in tensors]


# === The equations ============================================================


@pytest.mark.large_on("jax")
@agnostic
def test_bahdanau_decoder_matches_the_paper_step_by_step():
    x, memory, memory_mask, states = sample(0)
    decoder = layers.RecurrentDecoder(UNITS, cell="gru", num_layers=2, attention="bahdanau")
    decoder(x, memory)
    randomise(decoder, 1)
    outputs, weights = decoder(
        x,
        memory,
        initial_state=states[:2],
        encoder_sequence_mask=memory_mask,
        return_attention_scores=True,
    )
    expected, alphas = numpy_bahdanau_decoder(
        x,
        memory,
        memory_mask,
        states[:2],
        [cell_weights(cell) for cell in decoder.cells],
        as_numpy(decoder.attention_layer.weights),
    )
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs), expected, atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(weights), alphas, atol=1e-5)
    assert np.all(
        keras.ops.convert_to_numpy(weights)[~np.broadcast_to(memory_mask[:, None], alphas.shape)]
        == 0
    )

    # One step on its own, as decoding calls it: the first step of the sequence.
    step_out, new_states, step_weights = decoder.step(x[:, 0], states[:2], memory, memory_mask)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(step_out), expected[:, 0], atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(step_weights), alphas[:, 0], atol=1e-5)
    assert [s.shape for s in numpy_of(new_states)] == [(BATCH, UNITS)] * 2


@agnostic
@pytest.mark.parametrize(
    "score, input_feeding",
    [
        ("dot", False),
        ("general", False),
        ("concat", False),
        ("dot", True),
        ("general", True),
        ("concat", True),
    ],
)
def test_luong_decoder_matches_the_paper_step_by_step(score, input_feeding):
    x, memory, memory_mask, states = sample(2)
    memory = memory[..., :UNITS] if score == "dot" else memory  # dot needs d_enc = units
    decoder = layers.RecurrentDecoder(
        UNITS, cell="lstm", attention=f"luong_{score}", input_feeding=input_feeding
    )
    decoder(x, memory)
    randomise(decoder, 3)
    outputs, weights = decoder(
        x,
        memory,
        initial_state=states[:2],
        encoder_sequence_mask=memory_mask,
        return_attention_scores=True,
    )
    expected, alphas = numpy_luong_decoder(
        score,
        input_feeding,
        x,
        memory,
        memory_mask,
        states[0],
        states[1],
        cell_weights(decoder.cells[0]),
        as_numpy(decoder.attention_layer.weights),
        keras.ops.convert_to_numpy(decoder.attentional_projection.kernel).T,
    )
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs), expected, atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(weights), alphas, atol=1e-5)


@agnostic
def test_decoder_without_attention_is_the_stacked_rnn_from_the_encoder_state():
    x, _, _, states = sample(4)
    decoder = layers.RecurrentDecoder(UNITS, cell="simple", num_layers=2)
    decoder(x)
    randomise(decoder, 5)
    outputs = keras.ops.convert_to_numpy(decoder(x, initial_state=states[:2]))
    weights = [cell_weights(cell) for cell in decoder.cells]
    h = states[:2]
    for t in range(T):
        h[0] = numpy_simple_rnn(x[:, t], h[0], *weights[0])
        h[1] = numpy_simple_rnn(h[0], h[1], *weights[1])
        np.testing.assert_allclose(outputs[:, t], h[1], atol=1e-5)
    assert decoder.state_names == ("h_0", "h_1")


# === Behaviour ================================================================


@agnostic
@pytest.mark.parametrize("attention", [None, "bahdanau", "luong_general"])
def test_masked_decoder_steps_leave_the_state_unchanged(attention):
    x, memory, _, _ = sample(6)
    decoder = layers.RecurrentDecoder(UNITS, attention=attention, input_feeding=False)
    mask = np.ones((BATCH, T), bool)
    mask[:, 1] = False  # step 1 is skipped ...
    with_gap = keras.ops.convert_to_numpy(decoder(x, memory, decoder_sequence_mask=mask))
    without = keras.ops.convert_to_numpy(decoder(np.delete(x, 1, axis=1), memory))
    np.testing.assert_allclose(with_gap[:, [0, 2, 3]], without, atol=1e-5)  # ... as if absent
    np.testing.assert_array_equal(with_gap[:, 1], 0.0)


@agnostic
def test_state_names_follow_the_cell_and_input_feeding():
    lstm = layers.RecurrentDecoder(
        4, cell="lstm", num_layers=2, attention="luong_dot", input_feeding=True
    )
    assert lstm.state_names == ("h_0", "c_0", "h_1", "c_1", "attentional")
    assert layers.RecurrentDecoder(4, cell="gru").state_names == ("h_0",)
    assert layers.RecurrentDecoder(4, cell="cec_lstm").state_names == ("h_0", "c_0")


@agnostic
def test_precomputed_keys_give_the_same_step():
    x, memory, memory_mask, states = sample(7)
    decoder = layers.RecurrentDecoder(UNITS, cell="gru", attention="luong_concat")
    decoder(x, memory)
    keys = decoder.project_keys(memory)
    with_keys = decoder.step(x[:, 0], states[:1], memory, memory_mask, keys=keys)
    without = decoder.step(x[:, 0], states[:1], memory, memory_mask)
    np.testing.assert_allclose(*numpy_of([with_keys[0], without[0]]), atol=1e-6)  # outputs
    np.testing.assert_allclose(*numpy_of([with_keys[2], without[2]]), atol=1e-6)  # weights


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"units": -3}, "argument `units`, expected a positive integer"),
        ({"units": 4, "cell": "lstm2"}, "argument `cell`"),
        ({"units": 4, "attention": "luong"}, "argument `attention`, expected None or one of"),
        ({"units": 4, "attention": "bahdanau", "input_feeding": True}, "argument `input_feeding`"),
        ({"units": 4, "attention": None, "input_feeding": "yes"}, "argument `input_feeding`"),
        (
            {"units": 4, "attention": "luong_general", "attention_units": 8},
            "argument `attention_units`",
        ),
        ({"units": 4, "num_layers": 0}, "argument `num_layers`"),
    ],
)
@agnostic
def test_bad_arguments_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        layers.RecurrentDecoder(**kwargs)


@agnostic
def test_shape_errors_name_the_problem():
    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ValueError, match=r"luong_dot.*units=5.*d_enc=6"):
        layers.RecurrentDecoder(5, attention="luong_dot")(x, np.zeros((2, 7, 6), "float32"))
    with pytest.raises(ValueError, match="needs the encoder states"):
        layers.RecurrentDecoder(5, attention="bahdanau")(x)
    with pytest.raises(ValueError, match="initial_state of 2 tensors"):
        layers.RecurrentDecoder(5)(x, initial_state=[np.zeros((2, 5), "float32")])


# === The shared layer checks ===================================================

DECODER_INPUT = LayerInput("decoder_sequence", 4, sequence_lengths=(3, 6))
WITH_WEIGHTS = {"return_attention_scores": True}

# The case whose saved files (a .keras file reloaded with safe_mode, a SavedModel served by
# TensorFlow alone) are checked, in tests/keras_seq/test_saved_layers.py: in-loop attention
# (Bahdanau) over a stack of GRUs. The other cases share its saving code.
SAVED_CASES = {
    "gru_bahdanau": LayerCase(
        make=lambda **kw: layers.RecurrentDecoder(
            6, cell="gru", num_layers=2, attention="bahdanau", **kw
        ),
        named_inputs=(DECODER_INPUT, LayerInput("encoder_sequence", 5)),
        call_kwargs=WITH_WEIGHTS,
    ),
}

IN_PROCESS_CASES = {
    # In-loop attention through input feeding.
    "luong_concat_input_feeding": LayerCase(
        make=lambda **kw: layers.RecurrentDecoder(
            6, attention="luong_concat", attention_units=4, input_feeding=True, **kw
        ),
        named_inputs=(DECODER_INPUT, LayerInput("encoder_sequence", 5)),
        call_kwargs=WITH_WEIGHTS,
    ),
    # The batched path: the loop runs the cells, then one attention for all steps.
    "luong_general_batched": LayerCase(
        make=lambda **kw: layers.RecurrentDecoder(6, attention="luong_general", **kw),
        named_inputs=(DECODER_INPUT, LayerInput("encoder_sequence", 5)),
        call_kwargs=WITH_WEIGHTS,
    ),
    "luong_dot_cec_lstm": LayerCase(
        make=lambda **kw: layers.RecurrentDecoder(6, cell="cec_lstm", attention="luong_dot", **kw),
        named_inputs=(DECODER_INPUT, LayerInput("encoder_sequence", 6)),
        call_kwargs=WITH_WEIGHTS,
    ),
    "no_attention_simple": LayerCase(
        make=lambda **kw: layers.RecurrentDecoder(6, cell="simple", num_layers=2, **kw),
        named_inputs=(DECODER_INPUT, LayerInput("encoder_sequence", 5)),
    ),
}


# One case runs under JAX and PyTorch too; its eager checks take 10 s of CPU under JAX, which
# compiles each op at its first use (the others' take 2 s on TensorFlow).
test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step = (
    in_process_check_tests(
        {**SAVED_CASES, **IN_PROCESS_CASES},
        marks={"luong_concat_input_feeding": [agnostic]},
        large_eager={"luong_concat_input_feeding"},
    )
)
