"""ShowAttendTell against a NumPy version of Xu et al. (2015)'s soft-attention captioner.

Every weight is random (biases included) so that no term can hide; the NumPy
model computes the CNN, the regions, the initial state, the additive scores
over the regions, the LSTM and the softmax readout from the equations of the
module docstring, independently of Keras.
"""

import doctest

import keras
import numpy as np
import pytest

from keras_seq.models import (
    AssembledShowAttendTell,
    ShowAttendTell,
    assembled_captioner,
    beam_search,
    captioner,
    compile_decoder,
    greedy_decode,
)
from keras_seq.models.captioner import doubly_stochastic_penalty

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

agnostic = pytest.mark.backend_agnostic

VOCAB, IMAGE, FILTERS, UNITS, EMBED, HIDDEN = 9, (8, 8, 3), 4, 5, 3, 6
# float32 through a few layers of random weights of scale 0.5: 1e-5 absolute holds with
# a wide margin on every backend and CPU (the observed gap is about 1e-6).
ATOL = 1e-5


def numpy_of(x):
    return keras.ops.convert_to_numpy(x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x):
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def numpy_conv_relu_pool(x, kernel, bias):
    """3×3 convolution with zero padding ('same'), ReLU, then 2×2 max pooling of stride 2."""
    batch, height, width, _ = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((batch, height, width, kernel.shape[-1]))
    for dy in range(3):
        for dx in range(3):
            out += padded[:, dy : dy + height, dx : dx + width, :] @ kernel[dy, dx]
    out = np.maximum(out + bias, 0.0)
    return out.reshape(batch, height // 2, 2, width // 2, 2, -1).max(axis=(2, 4))


def numpy_captioner(images, captions, w):
    """Log-probabilities `(batch, T, V)` and weights `(batch, T, L)` of the teacher-forced pass.

    a = regions(CNN(image)) + P;  h_0 = tanh(W_h ā + b_h);  c_0 = tanh(W_c ā + b_c)
    e_ti = v_aᵀ tanh(W_a h_{t−1} + U_a a_i),   α_t = softmax(e_t),   ẑ_t = Σ_i α_ti a_i
    [i f g o] = [E y_{t−1}; ẑ_t] K + h_{t−1} R + b
    c_t = σ(f) c_{t−1} + σ(i) tanh(g),   h_t = σ(o) tanh(c_t)
    p_t = softmax(W_o [h_t; ẑ_t] + b_o)
    """
    x = images.astype(np.float64)
    for kernel, bias in w["convs"]:
        x = numpy_conv_relu_pool(x, kernel, bias)
    batch = len(x)
    a = x.reshape(batch, -1, x.shape[-1]) + w["positions"]  # (batch, L, D), row-major
    mean = a.mean(axis=1)
    h = np.tanh(mean @ w["initial_h"][0] + w["initial_h"][1])
    c = np.tanh(mean @ w["initial_c"][0] + w["initial_c"][1])
    previous = np.concatenate([np.ones((batch, 1), int), captions[:, :-1]], axis=1)  # START
    log_probs, alphas = [], []
    for t in range(captions.shape[1]):
        e = np.tanh((h @ w["w_a"])[:, None, :] + a @ w["u_a"]) @ w["v_a"]  # (batch, L)
        alpha = softmax(e)
        z = (alpha[:, :, None] * a).sum(axis=1)
        gates = np.concatenate([w["embedding"][previous[:, t]], z], -1) @ w["kernel"]
        gates += h @ w["recurrent_kernel"] + w["bias"]
        i, f, g, o = np.split(gates, 4, axis=-1)
        new_c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        new_h = sigmoid(o) * np.tanh(new_c)
        logits = np.concatenate([new_h, z], -1) @ w["output"][0] + w["output"][1]
        real = (captions[:, t] != 0)[:, None]  # padded steps keep the state
        h, c = np.where(real, new_h, h), np.where(real, new_c, c)
        log_probs.append(logits - np.log(np.exp(logits).sum(-1, keepdims=True)))
        alphas.append(np.where(real, alpha, 0.0))
    return np.stack(log_probs, 1), np.stack(alphas, 1)


def randomised(model, seed=0):
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(scale=0.5, size=variable.shape).astype("float32"))
    return model


def weights_of(model):
    by_name = {}
    for layer in model.region_layers:  # an encoder model of one's own: its layers
        for sub in layer.layers if isinstance(layer, keras.Model) else [layer]:
            if sub.weights:
                by_name.setdefault("convs", []).append([numpy_of(v) for v in sub.weights])
    cell = model.decoder.cells[0]
    attention = model.decoder.attention_layer
    by_name.update(
        positions=numpy_of(model.position_embedding.weights[0]),
        initial_h=[numpy_of(v) for v in model.initial_h.weights],
        initial_c=[numpy_of(v) for v in model.initial_c.weights],
        w_a=numpy_of(attention.query_projection),
        u_a=numpy_of(attention.key_projection),
        v_a=numpy_of(attention.score_vector),
        embedding=numpy_of(model.target_embedding.embeddings),
        kernel=numpy_of(cell.kernel),
        recurrent_kernel=numpy_of(cell.recurrent_kernel),
        bias=numpy_of(cell.bias),
        output=[numpy_of(v) for v in model.output_projection.weights],
    )
    return by_name


def make(**kwargs):
    arguments = {"filters": FILTERS, "units": UNITS, "embedding_dim": EMBED}
    arguments.update(attention_units=HIDDEN, **kwargs)
    return randomised(ShowAttendTell(VOCAB, IMAGE, **arguments))


def cnn_encoder():
    """The built-in encoder's two blocks as a functional model of one's own."""
    images = keras.Input(IMAGE)
    x = images
    for index in range(2):
        x = keras.layers.Conv2D(FILTERS, 3, padding="same", activation="relu")(x)
        x = keras.layers.MaxPooling2D(2, name=f"pool_{index}")(x)
    return keras.Model(images, x)


def make_assembled(**kwargs):
    arguments = {"units": UNITS, "embedding_dim": EMBED, "attention_units": HIDDEN, **kwargs}
    return randomised(AssembledShowAttendTell(VOCAB, cnn_encoder(), **arguments))


RNG = np.random.default_rng(1)
IMAGES = RNG.random((3, *IMAGE)).astype("float32")
CAPTIONS = np.array([[5, 6, 7, 2], [8, 2, 0, 0], [4, 4, 5, 2]])


@agnostic
@pytest.mark.parametrize("own_encoder", [False, True], ids=["built_in_cnn", "own_encoder"])
def test_the_teacher_forced_pass_and_its_attention_are_the_papers_equations(own_encoder):
    model = make_assembled() if own_encoder else make()
    assert model.region_grid == (2, 2) and model.num_regions == 4
    expected_log_probs, expected_alphas = numpy_captioner(IMAGES, CAPTIONS, weights_of(model))
    probabilities = numpy_of(model({"source": IMAGES, "target": CAPTIONS}))
    real = CAPTIONS != 0
    np.testing.assert_allclose(
        np.log(probabilities)[real], expected_log_probs[real], atol=ATOL, rtol=0
    )
    np.testing.assert_allclose(
        numpy_of(model.attention_weights(IMAGES, CAPTIONS)), expected_alphas, atol=ATOL, rtol=0
    )


@agnostic
def test_decode_step_reads_the_regions_as_the_teacher_forced_pass_does():
    model = make()
    expected_log_probs, expected_alphas = numpy_captioner(IMAGES, CAPTIONS, weights_of(model))
    state = model.encode(IMAGES)
    tokens = np.ones(len(IMAGES), "int32")  # START
    for step in range(CAPTIONS.shape[1]):
        log_probs, state, attention = model.decode_step(tokens, state)
        real = CAPTIONS[:, step] != 0
        np.testing.assert_allclose(
            numpy_of(log_probs)[real], expected_log_probs[real, step], atol=ATOL, rtol=0
        )
        np.testing.assert_allclose(
            numpy_of(attention)[real], expected_alphas[real, step], atol=ATOL, rtol=0
        )
        tokens = CAPTIONS[:, step]


@pytest.mark.large
@agnostic
def test_greedy_beam_and_compiled_decoding_caption_images():
    model = make()
    greedy = greedy_decode(model, IMAGES, 6, return_attention=True)
    assert tuple(greedy.ids.shape) == (3, 6) and tuple(greedy.attention.shape) == (3, 6, 4)
    weights = numpy_of(greedy.attention)
    emitted = numpy_of(greedy.ids) != 0
    np.testing.assert_allclose(weights.sum(-1)[emitted], 1.0, atol=1e-5)
    compiled = compile_decoder(model, 6)
    np.testing.assert_array_equal(numpy_of(compiled(IMAGES).ids), numpy_of(greedy.ids))
    beam = beam_search(model, IMAGES, 6, beam_width=3, coverage_penalty=0.2)
    assert tuple(beam.ids.shape) == (3, 6)
    # A beam of one is greedy decoding.
    np.testing.assert_array_equal(
        numpy_of(beam_search(model, IMAGES, 6, beam_width=1).ids), numpy_of(greedy.ids)
    )
    with pytest.raises(ValueError, match="`source`"):
        greedy_decode(model, IMAGES[:, :4], 6)  # images of the wrong size
    with pytest.raises(ValueError, match="`source`"):
        greedy_decode(model, np.array([[5, 6, 7]]), 6)  # token ids are not images


@agnostic
def test_the_doubly_stochastic_penalty_is_added_to_the_training_loss():
    alphas = np.random.default_rng(2).dirichlet(np.ones(4), size=(3, 5))  # (batch, T, L)
    expected = np.mean(np.sum((1.0 - alphas.sum(axis=1)) ** 2, axis=-1))
    np.testing.assert_allclose(
        numpy_of(doubly_stochastic_penalty(alphas.astype("float32"))), expected, rtol=1e-5
    )
    model = make(attention_penalty=2.5)
    model({"source": IMAGES, "target": CAPTIONS})
    _, weights = numpy_captioner(IMAGES, CAPTIONS, weights_of(model))
    penalty = np.mean(np.sum((1.0 - weights.sum(axis=1)) ** 2, axis=-1))
    assert len(model.losses) == 1
    np.testing.assert_allclose(numpy_of(model.losses[0]), 2.5 * penalty, rtol=1e-4)


@agnostic
def test_patches_and_a_gru_decoder_build_and_caption():
    model = ShowAttendTell(VOCAB, IMAGE, encoder="patches", patch_size=2, cell="gru", units=4)
    assert model.region_grid == (4, 4)
    probabilities = numpy_of(model({"source": IMAGES, "target": CAPTIONS}))
    assert probabilities.shape == (3, 4, VOCAB)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)


def test_it_saves_and_loads_with_safe_mode_and_its_config_is_its_arguments(tmp_path):
    model = make(attention_penalty=1.0, dropout=0.1)
    path = tmp_path / "captioner.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is ShowAttendTell
    inputs = {"source": IMAGES, "target": CAPTIONS}
    np.testing.assert_allclose(numpy_of(loaded(inputs)), numpy_of(model(inputs)), atol=1e-6)
    assert set(model.get_config()) == {
        "target_vocab_size",
        "image_shape",
        "encoder",
        "filters",
        "conv_layers",
        "patch_size",
        "region_positions",
        "cell",
        "units",
        "attention_units",
        "embedding_dim",
        "attention_penalty",
        "dropout",
        "name",
        "trainable",
        "dtype",
    }


def test_an_own_encoder_model_saves_and_loads_with_safe_mode(tmp_path):
    model = make_assembled(attention_penalty=1.0, cell="gru")
    assert model.region_grid == (2, 2) and model.image_shape == IMAGE
    path = tmp_path / "captioner.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is AssembledShowAttendTell and loaded.region_grid == (2, 2)
    inputs = {"source": IMAGES, "target": CAPTIONS}
    np.testing.assert_allclose(numpy_of(loaded(inputs)), numpy_of(model(inputs)), atol=1e-6)
    assert set(model.get_config()) == {
        "target_vocab_size",
        "encoder",
        "region_positions",
        "cell",
        "units",
        "attention_units",
        "embedding_dim",
        "attention_penalty",
        "dropout",
        "name",
        "trainable",
        "dtype",
    }


def _flat_encoder():
    images = keras.Input(IMAGE)
    return keras.Model(images, keras.layers.Reshape((64, 3))(images))


@pytest.mark.parametrize(
    "encoder",
    [_flat_encoder, lambda: "cnn", lambda: keras.Sequential([keras.layers.Dense(3)])],
    ids=["regions_not_a_map", "not_a_model", "no_known_input"],
)
def test_an_encoder_that_gives_no_feature_map_is_refused_naming_it(encoder):
    with pytest.raises(ValueError, match="`encoder`"):
        AssembledShowAttendTell(VOCAB, encoder())


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"image_shape": (8, 8)}, "image_shape"),
        ({"image_shape": (10, 8, 3)}, "conv_layers"),
        ({"encoder": "patches", "patch_size": 3}, "patch_size"),
        ({"encoder": "vgg"}, "encoder"),
        ({"attention_penalty": -1.0}, "attention_penalty"),
        ({"conv_layers": 9}, "conv_layers"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(arguments, named):
    arguments = {"image_shape": IMAGE, **arguments}
    with pytest.raises(ValueError, match=f"`{named}`"):
        ShowAttendTell(VOCAB, **arguments)


@pytest.mark.parametrize("module", [captioner, assembled_captioner], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, globs={"np": np, "keras": keras, **vars(module)})
    assert result.failed == 0 and result.attempted > 0
