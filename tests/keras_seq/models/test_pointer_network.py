"""The pointer network: its helper layers, teacher forcing, greedy decoding, saving, and learning.

The fast tests check each piece against an independent NumPy version (fancy
indexing, a loop over the pointers, the equations of Vinyals et al. 2015 with
random weights) or against a property the definition implies (distributions
sum to 1, excluded positions get exactly 0, decoding with exclusion returns a
permutation, step `i` cannot see pointers from step `i` on). They also run
under JAX.

The learning test (`large`, TensorFlow) trains the network on `sort_numbers`
with 5 numbers and measures greedy decoding with exclusion on the validation
split. With 8,000 training sequences, 10 epochs, 64 units, Adam 1e-2
(clipnorm 1) and batch 64, measured on 2 shared CPU cores:

    seed  per-position  exact permutation
    0     0.985         0.962
    1     0.994         0.985
    2     0.979         0.947
    3     0.989         0.973
    4     0.989         0.973

Chance is 0.2 per position and 1/120 ≈ 0.008 for a whole permutation. The
network learns most of it in the first epoch: on 4,000 training sequences,
seed 0 reached 0.970 / 0.928 after one epoch, 0.982 / 0.954 after two, and
stayed within 0.976-0.978 / 0.939-0.944 up to six. The test trains seed 0
for two epochs on 4,000 sequences (1,000 to validate) and asks for 0.90 per
position and 0.80 exact: 4.5 and 100 times chance, with a margin under every
epoch measured. Trained without exclusion (`exclude_chosen=False`, as in the
paper) and decoded with it, the 10-epoch budget reached 0.946 / 0.882 (seed
0) and 0.952 / 0.897 (seed 1).
"""

import re

import keras
import matplotlib
import numpy as np
import pytest
from keras import ops

from keras_seq import argument_checks
from keras_seq.diagnostics import plot_alignment
from keras_seq.layers import PointerAttention
from keras_seq.models import PointerNetwork, pointer_network
from keras_seq.models import pointer as pointer_module
from keras_seq.models.pointer import (
    AvailablePositions,
    GatherSteps,
    ShiftRight,
)
from keras_seq.tasks import sort_numbers
from tests.allocation import allocates_little

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

matplotlib.use("Agg")

agnostic = pytest.mark.backend_agnostic

CELLS = ["lstm", "gru", "cec_lstm"]


def _numpy(x):
    return ops.convert_to_numpy(x)


def _random_sequences(batch, n, features=1, seed=0):
    return np.random.default_rng(seed).random((batch, n, features)).astype("float32")


def _random_permutations(batch, n, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(batch)]).astype("int32")


def _network(seed=0, **kwargs):
    keras.utils.set_random_seed(seed)
    return pointer_network(kwargs.pop("input_features", 1), units=8, **kwargs)


def _is_permutation(rows, n):
    return bool(np.all(np.sort(rows, axis=1) == np.arange(n)))


# ----------------------------------------------------------------------------- helper layers


@agnostic
def test_gather_steps_picks_the_indexed_step_of_each_sequence():
    rng = np.random.default_rng(1)
    sequence = rng.standard_normal((3, 5, 2)).astype("float32")
    indices = np.array([[4, 0, 0], [1, 3, 2], [2, 2, 4]], "int32")

    gathered = _numpy(GatherSteps()(sequence, indices))

    expected = sequence[np.arange(3)[:, None], indices]  # NumPy fancy indexing
    np.testing.assert_array_equal(gathered, expected)


@agnostic
def test_shift_right_puts_the_learned_start_vector_first_and_drops_the_last_step():
    rng = np.random.default_rng(2)
    inputs = rng.standard_normal((2, 4, 3)).astype("float32")
    start = rng.standard_normal(3).astype("float32")
    layer = ShiftRight()
    layer.build(inputs.shape)
    layer.set_weights([start])

    shifted = _numpy(layer(inputs))

    np.testing.assert_array_equal(shifted[:, 0], np.broadcast_to(start, (2, 3)))
    np.testing.assert_array_equal(shifted[:, 1:], inputs[:, :-1])


@agnostic
def test_shift_right_without_a_learned_start_starts_from_zeros_and_has_no_weights():
    inputs = np.arange(12, dtype="float32").reshape(2, 3, 2) + 1.0
    layer = ShiftRight(learned_start=False)

    shifted = _numpy(layer(inputs))

    assert layer.weights == []
    np.testing.assert_array_equal(shifted[:, 0], np.zeros((2, 2)))
    np.testing.assert_array_equal(shifted[:, 1:], inputs[:, :-1])


@agnostic
def test_available_positions_masks_the_positions_chosen_at_earlier_steps():
    pointers = np.array([[2, 0, 3, 1], [1, 1, 0, 2]], "int32")  # the second row repeats
    sequence = np.zeros((2, 4, 1), "float32")

    mask = _numpy(AvailablePositions()(sequence, pointers))

    expected = np.ones((2, 4, 4), bool)
    for b in range(2):
        for i in range(4):
            for earlier in pointers[b, :i]:
                expected[b, i, earlier] = False
    np.testing.assert_array_equal(mask, expected)


def _pointer_numpy(d, e, w_1, w_2, v, mask):
    """u_ij = vᵀ tanh(W_1 e_j + W_2 d_i), softmax over the unmasked j, 0 elsewhere."""
    u = np.tanh((e @ w_1)[:, None, :, :] + (d @ w_2)[:, :, None, :]) @ v  # (batch, Tq, Tv)
    u = np.where(mask, u, -np.inf)
    p = np.exp(u - u.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def _attention_with_numpy_weights(cls, d_q, d_k, units, seed):
    rng = np.random.default_rng(seed)
    w_2 = rng.standard_normal((d_q, units)).astype("float32") / np.sqrt(d_q)  # query_projection
    w_1 = rng.standard_normal((d_k, units)).astype("float32") / np.sqrt(d_k)  # key_projection
    v = rng.standard_normal(units).astype("float32")  # score_vector
    layer = cls(units)
    layer.build((None, None, d_q), (None, None, d_k))
    layer.set_weights([w_2, w_1, v])
    return layer, w_1, w_2, v


@agnostic
def test_pointer_attention_matches_the_paper_with_a_mask_per_step():
    rng = np.random.default_rng(3)
    e = rng.standard_normal((2, 5, 4)).astype("float32")  # encoder states
    d = rng.standard_normal((2, 3, 6)).astype("float32")  # decoder states
    mask = rng.random((2, 3, 5)) < 0.6
    mask[..., 0] = True  # every step can point somewhere
    layer, w_1, w_2, v = _attention_with_numpy_weights(PointerAttention, 6, 4, 7, seed=4)

    p = _numpy(layer(d, e, value_mask=mask))

    np.testing.assert_allclose(p, _pointer_numpy(d, e, w_1, w_2, v, mask), atol=1e-6)
    assert np.all(p[~mask] == 0.0)


@agnostic
@pytest.mark.parametrize("exclude_chosen", [True, False])
def test_output_is_one_distribution_per_step_over_the_input_positions(exclude_chosen):
    net = _network(exclude_chosen=exclude_chosen)  # one network for every input length
    for n, m in [(6, 6), (6, 3), (9, 9)]:
        x = _random_sequences(4, n)
        pointers = _random_permutations(4, n)[:, :m]

        p = _numpy(net({"sequence": x, "pointers": pointers}))

        assert p.shape == (4, m, n)
        assert np.all(p >= 0.0)
        np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-5)


@agnostic
def test_teacher_forced_steps_give_zero_probability_to_positions_already_pointed_at():
    x = _random_sequences(3, 6, seed=1)
    pointers = _random_permutations(3, 6, seed=1)

    excluding = _numpy(_network(exclude_chosen=True)({"sequence": x, "pointers": pointers}))
    plain = _numpy(_network(exclude_chosen=False)({"sequence": x, "pointers": pointers}))

    for b in range(3):
        for i in range(6):
            earlier = pointers[b, :i]
            later = np.setdiff1d(np.arange(6), earlier)
            assert np.all(excluding[b, i, earlier] == 0.0)
            assert np.all(excluding[b, i, later] > 0.0)
    assert np.all(plain > 0.0)


@agnostic
def test_step_i_reads_the_element_pointed_at_step_i_minus_1_and_no_later_pointer():
    net = _network(exclude_chosen=False)
    x = _random_sequences(2, 5, seed=2)
    pointers = np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]], "int32")
    changed = pointers.copy()
    changed[:, 2] = [4, 0]  # another element at step 2

    p = _numpy(net({"sequence": x, "pointers": pointers}))
    q = _numpy(net({"sequence": x, "pointers": changed}))

    # Steps 0-2 never see pointer 2 (causal; step 0 reads the start vector) ...
    np.testing.assert_array_equal(p[:, :3], q[:, :3])
    # ... step 3 reads x[π_2], so it changes, and so does everything after it.
    assert np.all(np.abs(p[:, 3:] - q[:, 3:]).max(axis=-1) > 1e-6)


@pytest.mark.large
@agnostic
@pytest.mark.parametrize("cell", CELLS)
def test_one_training_step_runs_and_gives_a_finite_loss(cell):
    task = sort_numbers(4, 40, seed=0)
    net = _network(cell=cell)
    net.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])

    history = net.fit(
        {"sequence": task.x_train, "pointers": task.y_train},
        task.y_train,
        epochs=1,
        batch_size=16,
        verbose=0,
    )

    assert np.isfinite(history.history["loss"][0])


# -------------------------------------------------------------------------- greedy decoding


@agnostic
@pytest.mark.parametrize("cell", CELLS)
def test_greedy_decoding_with_exclusion_returns_permutations(cell):
    net = _network(cell=cell)
    x = _random_sequences(16, 7, seed=3)

    pointers = net.decode(x, exclude_chosen=True)

    assert pointers.shape == (16, 7) and pointers.dtype == np.int32
    assert _is_permutation(pointers, 7)


@agnostic
def test_decoding_gives_zero_probability_to_positions_already_chosen():
    net = _network()
    x = _random_sequences(8, 6, seed=4)

    pointers, p = net.decode(x, return_probabilities=True)

    assert p.shape == (8, 6, 6) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-5)
    for b in range(8):
        for i in range(6):
            assert np.all(p[b, i, pointers[b, :i]] == 0.0)
        # The last step has one position left, which gets everything: exp(z - max) / sum over
        # one term is 1 up to float32 rounding of the normaliser (0.99999994 seen on AMD EPYC),
        # so within a few float32 ulps (1.2e-7 each) of 1.
        assert p[b, 5, pointers[b, 5]] == pytest.approx(1.0, abs=1e-6)


@agnostic
@pytest.mark.parametrize("exclude_chosen", [True, False])
def test_decoding_is_the_teacher_forced_pass_fed_its_own_greedy_choices(exclude_chosen):
    net = _network(exclude_chosen=exclude_chosen, input_features=2)
    x = _random_sequences(5, 6, features=2, seed=5)

    pointers, p = net.decode(x, return_probabilities=True)
    forced = _numpy(net({"sequence": x, "pointers": pointers}))

    np.testing.assert_array_equal(pointers, np.argmax(p, axis=-1))
    np.testing.assert_allclose(p, forced, atol=1e-5)


@agnostic
def test_decoding_follows_the_networks_exclusion_unless_told_otherwise():
    net = _network(exclude_chosen=False)
    x = _random_sequences(8, 5, seed=6)

    _, p_default = net.decode(x, return_probabilities=True)
    _, p_excluding = net.decode(x, exclude_chosen=True, return_probabilities=True)

    assert np.all(p_default > 0.0)  # nothing masked
    assert np.sum(p_excluding == 0.0) == 8 * (0 + 1 + 2 + 3 + 4)  # the earlier choices


@agnostic
def test_decoding_emits_num_steps_pointers():
    net = _network()
    x = _random_sequences(3, 6, seed=7)

    assert net.decode(x, num_steps=2).shape == (3, 2)
    assert net.decode(x, num_steps=9, exclude_chosen=False).shape == (3, 9)
    with pytest.raises(ValueError, match=r"`num_steps`.*no larger than 6.*got 7"):
        net.decode(x, num_steps=7)
    with pytest.raises(ValueError, match=r"`num_steps`.*got 0"):
        net.decode(x, num_steps=0)


@agnostic
@pytest.mark.parametrize(
    "shape", [(3, 6), (3, 6, 2), (3, 0, 1), (6, 1, 1, 1)], ids=["2d", "features", "empty", "4d"]
)
def test_decoding_refuses_sequences_of_the_wrong_shape(shape):
    net = _network()
    with pytest.raises(ValueError, match=r"`sequence`.*\(batch, n, 1\).*got shape"):
        net.decode(np.zeros(shape, "float32"))


@agnostic
def test_decoded_distributions_draw_as_an_alignment():
    net = _network()
    x = _random_sequences(1, 4, seed=8)
    pointers, p = net.decode(x, return_probabilities=True)
    source = [f"{value:.2f}" for value in x[0, :, 0]]
    target = [f"step {i}" for i in range(4)]

    figure = plot_alignment(p[0], source, target)

    np.testing.assert_array_equal(figure.axes[0].get_images()[0].get_array(), p[0])
    assert pointers.shape == (1, 4)


# ------------------------------------------------------------------- arguments and saving


@agnostic
@pytest.mark.parametrize(
    ("kwargs", "argument", "value"),
    [
        ({"input_features": 0}, "input_features", "0"),
        ({"input_features": 2.0}, "input_features", "2.0"),
        ({"units": 0}, "units", "0"),
        ({"units": 10**12}, "units", "1000000000000"),
        ({"cell": "rnn"}, "cell", "'rnn'"),
        ({"cell": None}, "cell", "None"),
        ({"exclude_chosen": "yes"}, "exclude_chosen", "'yes'"),
    ],
)
def test_bad_arguments_raise_naming_the_argument_and_value(kwargs, argument, value):
    arguments = {"input_features": 1, **kwargs}
    with pytest.raises(ValueError, match=f"`{argument}`.*got {re.escape(value)}"):
        PointerNetwork(**arguments)


@agnostic
def test_a_network_too_large_to_allocate_is_refused_at_once():
    with allocates_little(), pytest.raises(ValueError, match=r"Layer `encoder` would create"):
        PointerNetwork(1, units=argument_checks.MAX_UNITS)


@agnostic
def test_decode_refuses_non_boolean_flags():
    net = _network()
    x = _random_sequences(2, 3)
    with pytest.raises(ValueError, match=r"`exclude_chosen`.*got 1"):
        net.decode(x, exclude_chosen=1)
    with pytest.raises(ValueError, match=r"`return_probabilities`.*got 'no'"):
        net.decode(x, return_probabilities="no")


@agnostic
@pytest.mark.parametrize("cls", [PointerNetwork, GatherSteps, ShiftRight, AvailablePositions])
def test_classes_are_registered_under_keras_seq(cls):
    assert keras.saving.get_registered_name(cls) == f"keras_seq>{cls.__name__}"
    assert keras.saving.get_registered_object(f"keras_seq>{cls.__name__}") is cls


@agnostic
@pytest.mark.parametrize(
    "layer",
    [
        GatherSteps(name="g"),
        ShiftRight(learned_start=False, start_initializer="zeros", name="s"),
        AvailablePositions(name="a"),
    ],
    ids=lambda layer: type(layer).__name__,
)
def test_helper_layer_config_holds_its_arguments_and_rebuilds_it(layer):
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config


@agnostic
def test_network_config_is_its_arguments():
    net = pointer_network(3, units=12, cell="gru", exclude_chosen=False, name="sorter")
    assert net.get_config() == {
        "input_features": 3,
        "units": 12,
        "cell": "gru",
        "exclude_chosen": False,
        "encoder": None,  # its own recurrent layer
        "name": "sorter",
        "trainable": True,
    }
    clone = PointerNetwork.from_config(net.get_config())
    assert clone.get_config() == net.get_config()
    assert [w.shape for w in clone.weights] == [w.shape for w in net.weights]


@agnostic
@pytest.mark.parametrize(
    ("cell", "exclude_chosen"), [("lstm", True), ("gru", False), ("cec_lstm", True)]
)
def test_keras_file_reloads_with_safe_mode_and_decodes_the_same(cell, exclude_chosen, tmp_path):
    net = _network(cell=cell, exclude_chosen=exclude_chosen)
    x = _random_sequences(4, 6, seed=9)
    pointers = _random_permutations(4, 6, seed=9)
    path = tmp_path / "pointer.keras"

    net.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)

    assert isinstance(loaded, PointerNetwork)
    assert loaded.get_config() == net.get_config()
    np.testing.assert_allclose(
        _numpy(loaded({"sequence": x, "pointers": pointers})),
        _numpy(net({"sequence": x, "pointers": pointers})),
        atol=1e-6,
    )
    np.testing.assert_array_equal(loaded.decode(x), net.decode(x))


@agnostic
def test_an_encoder_of_ones_own_is_the_network_and_reloads_with_safe_mode(tmp_path):
    # The network's own encoder as a functional model (its LSTM's states and final h, c):
    # the same weights (by path) give the same pointers and probabilities, 1e-6 (same kernels).
    reference = PointerNetwork(1, units=8)
    sequence = keras.Input((None, 1), name="sequence")
    states, h, c = keras.layers.LSTM(8, return_sequences=True, return_state=True, name="encoder")(
        sequence
    )
    encoder = keras.Model(sequence, {"memory": states, "state": [h, c]}, name="encoder")
    own = PointerNetwork(1, units=8, encoder=encoder)
    values = {weight.path: weight for weight in reference.weights}
    for weight in own.weights:
        weight.assign(values[weight.path])
    x = _random_sequences(4, 6)
    inputs = {"sequence": x, "pointers": np.argsort(x[..., 0], axis=1)}
    np.testing.assert_allclose(_numpy(own(inputs)), _numpy(reference(inputs)), atol=1e-6)
    np.testing.assert_array_equal(own.decode(x), reference.decode(x))
    own.save(tmp_path / "own.keras")
    loaded = keras.saving.load_model(tmp_path / "own.keras", safe_mode=True)
    np.testing.assert_allclose(_numpy(loaded(inputs)), _numpy(own(inputs)), atol=1e-6)
    with pytest.raises(ValueError, match=r"a 'state' of the lstm decoder's 2 state tensor"):
        PointerNetwork(1, units=8, encoder=keras.Model(sequence, {"memory": states, "state": h}))


def test_docstring_examples_run():
    import doctest

    globs = {"np": np, "keras": keras, **vars(pointer_module)}
    result = doctest.testmod(pointer_module, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------------- learning

LENGTH = 5
NUM_SEQUENCES = 5_000  # 4,000 to train, 1,000 to validate
EPOCHS = 2
BATCH_SIZE = 64
UNITS = 64
LEARNING_RATE = 1e-2


@pytest.mark.large
def test_pointer_network_learns_to_sort_five_numbers():
    seed = 0
    keras.utils.set_random_seed(seed)
    task = sort_numbers(LENGTH, NUM_SEQUENCES, seed=seed)
    net = pointer_network(task.inputs.features, units=UNITS)
    net.compile(
        keras.optimizers.Adam(LEARNING_RATE, clipnorm=1.0),
        loss="sparse_categorical_crossentropy",
    )
    net.fit(
        {"sequence": task.x_train, "pointers": task.y_train},
        task.y_train,
        epochs=EPOCHS,
        batch_size=BATCH_SIZE,
        verbose=0,
    )

    pointers = net.decode(task.x_val, exclude_chosen=True)
    per_position = np.mean(pointers == task.y_val)
    exact = np.mean(np.all(pointers == task.y_val, axis=1))
    # The numbers read in decoded order are sorted whenever the permutation is exact.
    numbers = task.x_val[..., 0]
    sorted_rows = np.all(np.diff(np.take_along_axis(numbers, pointers, axis=1), axis=1) >= 0, 1)

    assert _is_permutation(pointers, LENGTH)
    assert per_position >= 0.90, f"per-position accuracy {per_position:.3f}"
    assert exact >= 0.80, f"exact-match accuracy {exact:.3f}"
    assert np.mean(sorted_rows) >= exact
