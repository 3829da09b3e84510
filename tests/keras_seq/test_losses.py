"""Label smoothing: the smoothed cross-entropies against NumPy, PAD left out, saved and loaded."""

import keras
import numpy as np
import pytest

from keras_seq.losses import (
    MaskedSparseCategoricalCrossentropy,
    SmoothedSparseCategoricalCrossentropy,
    with_label_smoothing,
)
from keras_seq.models import compile_for
from keras_seq.tasks.base import TargetSpec

pytestmark = pytest.mark.backend_agnostic

PAD = 0


def softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def numpy_smoothed(targets, probabilities, epsilon):
    """−Σ_k q_k log p_k with q = (1 − ε)·onehot(y) + ε/K (Szegedy et al. 2016), per position."""
    k = probabilities.shape[-1]
    q = (1 - epsilon) * np.eye(k)[targets] + epsilon / k
    return -(q * np.log(probabilities)).sum(-1)


def padded_batch(rng, batch=5, length=7, vocab=11):
    """Targets with a PAD tail of random length per sentence, and random probabilities."""
    targets = rng.integers(1, vocab, size=(batch, length))
    for row, real in enumerate(rng.integers(1, length + 1, size=batch)):
        targets[row, real:] = PAD
    logits = rng.normal(scale=2.0, size=(batch, length, vocab))
    return targets, logits.astype("float32"), softmax(logits).astype("float32")


@pytest.mark.parametrize("epsilon", [0.1, 0.35])
def test_masked_smoothed_loss_is_the_mean_smoothed_cross_entropy_of_the_real_tokens(epsilon):
    rng = np.random.default_rng(11)
    targets, logits, probabilities = padded_batch(rng)
    real = targets != PAD
    expected = numpy_smoothed(targets, probabilities.astype("float64"), epsilon)[real].mean()
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=epsilon)
    # float32 logs against float64: relative agreement to 1e-5.
    assert float(loss(targets, probabilities)) == pytest.approx(expected, rel=1e-5)
    from_logits = MaskedSparseCategoricalCrossentropy(label_smoothing=epsilon, from_logits=True)
    assert float(from_logits(targets, logits)) == pytest.approx(expected, rel=1e-5)

    weights = np.array([1.0, 0.5, 2.0, 0.0, 1.5], "float32")
    per_token = numpy_smoothed(targets, probabilities.astype("float64"), epsilon)
    weighted = (per_token * weights[:, None] * real).sum() / real.sum()
    assert float(loss(targets, probabilities, sample_weight=weights)) == pytest.approx(
        weighted, rel=1e-5
    )


def test_padding_positions_do_not_count_whatever_is_predicted_there():
    rng = np.random.default_rng(12)
    targets, _, probabilities = padded_batch(rng)
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.2)
    scrambled = probabilities.copy()
    pads = targets == PAD
    scrambled[pads] = softmax(rng.normal(size=(int(pads.sum()), probabilities.shape[-1])))
    assert float(loss(targets, scrambled)) == pytest.approx(
        float(loss(targets, probabilities)), rel=1e-6
    )


def test_the_smoothing_spreads_over_the_whole_vocabulary_reserved_ids_included():
    """K is the prediction's last axis (fairseq's choice), PAD's id among them."""
    targets = np.array([[3, PAD]])
    probabilities = np.array([[[0.04, 0.26, 0.1, 0.5, 0.1], [0.2] * 5]], "float32")
    loss = float(MaskedSparseCategoricalCrossentropy(label_smoothing=0.5)(targets, probabilities))
    first = probabilities[0, :1].astype("float64")
    over_all_five = numpy_smoothed(np.array([3]), first, 0.5)[0]
    # The other convention, ε spread over the non-PAD ids 1..4 only.
    q = np.array([0.0, 0.125, 0.125, 0.625, 0.125])
    over_the_four = -(q * np.log(first[0])).sum()
    assert loss == pytest.approx(over_all_five, rel=1e-5)
    assert abs(loss - over_the_four) > 0.1


def test_without_smoothing_the_masked_loss_is_the_negative_log_likelihood():
    rng = np.random.default_rng(13)
    targets, _, probabilities = padded_batch(rng)
    real = targets != PAD
    picked = np.take_along_axis(probabilities, targets[..., None], -1)[..., 0]
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.0)
    assert float(loss(targets, probabilities)) == pytest.approx(
        -np.log(picked[real].astype("float64")).mean(), rel=1e-5
    )


def test_classification_loss_with_smoothing_matches_numpy_for_both_target_shapes():
    rng = np.random.default_rng(14)
    logits = rng.normal(size=(9, 6))
    probabilities = softmax(logits).astype("float32")
    targets = rng.integers(0, 6, size=9)
    expected = numpy_smoothed(targets, probabilities.astype("float64"), 0.1).mean()
    loss = SmoothedSparseCategoricalCrossentropy(label_smoothing=0.1)
    assert float(loss(targets, probabilities)) == pytest.approx(expected, rel=1e-5)
    assert float(loss(targets[:, None], probabilities)) == pytest.approx(expected, rel=1e-5)
    from_logits = SmoothedSparseCategoricalCrossentropy(0.1, from_logits=True)
    assert float(from_logits(targets, logits.astype("float32"))) == pytest.approx(
        expected, rel=1e-5
    )
    # ε = 0 is Keras' sparse categorical cross-entropy.
    plain = keras.losses.SparseCategoricalCrossentropy()(targets, probabilities)
    assert float(SmoothedSparseCategoricalCrossentropy(0.0)(targets, probabilities)) == (
        pytest.approx(float(plain), rel=1e-5)
    )


def test_with_label_smoothing_maps_each_one_hot_loss_and_refuses_the_others():
    masked = with_label_smoothing(MaskedSparseCategoricalCrossentropy(pad_id=4), 0.1)
    assert isinstance(masked, MaskedSparseCategoricalCrossentropy)
    assert (masked.pad_id, masked.label_smoothing) == (4, 0.1)
    sparse = with_label_smoothing("sparse_categorical_crossentropy", 0.2)
    assert isinstance(sparse, SmoothedSparseCategoricalCrossentropy)
    assert sparse.label_smoothing == 0.2
    keras_sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    assert with_label_smoothing(keras_sparse, 0.2).from_logits is True
    dense = with_label_smoothing("categorical_crossentropy", 0.3)
    assert isinstance(dense, keras.losses.CategoricalCrossentropy)
    assert dense.get_config()["label_smoothing"] == 0.3
    assert with_label_smoothing("mean_squared_error", 0.0) == "mean_squared_error"
    with pytest.raises(ValueError, match="no one-hot target to smooth, 'mean_squared_error'"):
        with_label_smoothing("mean_squared_error", 0.1)
    with pytest.raises(ValueError, match=r"argument `label_smoothing`.*got 1\.0"):
        with_label_smoothing("sparse_categorical_crossentropy", 1.0)
    with pytest.raises(ValueError, match=r"argument `label_smoothing`.*got -0\.1"):
        MaskedSparseCategoricalCrossentropy(label_smoothing=-0.1)


def test_configs_hold_the_constructor_arguments_and_round_trip():
    masked = MaskedSparseCategoricalCrossentropy(pad_id=2, from_logits=True, label_smoothing=0.1)
    assert masked.get_config() == {
        "pad_id": 2,
        "from_logits": True,
        "label_smoothing": 0.1,
        "name": "masked_sparse_categorical_crossentropy",
    }
    assert MaskedSparseCategoricalCrossentropy.from_config(masked.get_config()).label_smoothing == (
        0.1
    )
    sparse = SmoothedSparseCategoricalCrossentropy(0.25, name="smooth")
    assert SmoothedSparseCategoricalCrossentropy.from_config(sparse.get_config()).get_config() == {
        "label_smoothing": 0.25,
        "from_logits": False,
        "name": "smooth",
    }
    # A config saved before label smoothing existed still loads, unsmoothed.
    old = {"pad_id": 0, "from_logits": False, "name": "masked_sparse_categorical_crossentropy"}
    assert MaskedSparseCategoricalCrossentropy.from_config(old).label_smoothing == 0.0


def test_compile_for_smooths_classification_and_the_model_reloads_with_safe_mode(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    compile_for(model, TargetSpec("classification", num_classes=3), label_smoothing=0.1)
    assert isinstance(model.loss, SmoothedSparseCategoricalCrossentropy)
    rng = np.random.default_rng(15)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.integers(0, 3, size=16)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "smoothed.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded.loss, SmoothedSparseCategoricalCrossentropy)
    assert loaded.loss.label_smoothing == 0.1
    # The reported loss is the smoothed one: NumPy's on the model's own predictions.
    predictions = keras.ops.convert_to_numpy(loaded(x)).astype("float64")
    evaluated = loaded.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)["loss"]
    assert evaluated == pytest.approx(numpy_smoothed(y, predictions, 0.1).mean(), rel=1e-5)

    with pytest.raises(ValueError, match="argument `label_smoothing`, expected 0 for regression"):
        compile_for(model, TargetSpec("regression", output_dim=1), label_smoothing=0.1)
