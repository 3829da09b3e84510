"""shape_captions: every caption says what its image shows, and the boxes hold the objects."""

import numpy as np
import pytest

from keras_seq.tasks import caption_vocabulary, shape_captions
from keras_seq.tasks.captions import COLOURS, SIZES
from keras_seq.tasks.images import SHAPE_NAMES

agnostic = pytest.mark.backend_agnostic


def _parse(caption):
    """(relation, [(size, colour, shape), (size, colour, shape)]) of a caption."""
    words = caption.split()
    second = len(words) - 4  # "a <size> <colour> <shape>" closes every caption
    relation = " ".join(words[4:second])
    return relation, [tuple(words[1:4]), tuple(words[second + 1 :])]


@agnostic
def test_every_caption_names_the_objects_inside_their_boxes_in_reading_order():
    task = shape_captions(60, 32, noise=0.0, seed=3)
    vocabulary = task.target_vocabulary
    for split in ("train", "val"):
        images = getattr(task, f"x_{split}")
        captions = getattr(task, f"y_{split}")
        boxes = task.annotations[f"boxes_{split}"]
        for image, ids, box_pair in zip(images, captions, boxes, strict=True):
            relation, objects = _parse(vocabulary.decode(ids))
            assert relation in ("above", "to the left of")
            (_, _, bottom_0, right_0), (top_1, left_1, _, _) = box_pair
            if relation == "above":  # the first wholly in the top half, the second below
                assert bottom_0 <= 16 + 1e-6 <= top_1 + 2e-6
            else:
                assert right_0 <= 16 + 1e-6 <= left_1 + 2e-6
            for (size, colour, shape), (top, left, bottom, right) in zip(
                objects, box_pair, strict=True
            ):
                assert size in SIZES and shape in SHAPE_NAMES
                half = (bottom - top) / 2 / 32
                low, high = SIZES[size]
                assert low - 1e-6 <= half <= high + 1e-6
                # The object's pixels carry its colour, and lie inside its box.
                rows = slice(int(np.floor(top)), int(np.ceil(bottom)))
                columns = slice(int(np.floor(left)), int(np.ceil(right)))
                inside = image[rows, columns]
                lit = inside.max(axis=-1) > 0.5
                assert lit.sum() > 0
                expected = np.array(COLOURS[colour])
                np.testing.assert_array_equal(inside[lit].max(axis=0) > 0.5, expected > 0.5)
        # Nothing is drawn outside the two boxes (no noise here).
        for image, box_pair in zip(images, boxes, strict=True):
            outside = np.ones(image.shape[:2], bool)
            for top, left, bottom, right in box_pair:
                outside[
                    int(np.floor(top)) : int(np.ceil(bottom)),
                    int(np.floor(left)) : int(np.ceil(right)),
                ] = False
            assert image[outside].max() == 0.0  # exact: background pixels are never touched


@agnostic
def test_word_objects_mark_the_size_colour_and_shape_words_of_each_object():
    task = shape_captions(20, 32, seed=1)
    vocabulary = task.target_vocabulary
    for ids, objects in zip(task.y_val, task.annotations["word_objects_val"], strict=True):
        words = [vocabulary.id_to_token(int(i)) for i in ids]
        for word, obj in zip(words, objects, strict=True):
            content = word in SIZES or word in COLOURS or word in SHAPE_NAMES
            assert (obj >= 0) == content
        first = [w for w, o in zip(words, objects, strict=True) if o == 0]
        second = [w for w, o in zip(words, objects, strict=True) if o == 1]
        assert len(first) == len(second) == 3


@agnostic
def test_it_is_seeded_balanced_enough_and_fits_the_vocabulary():
    a, b = shape_captions(400, 16, seed=5), shape_captions(400, 16, seed=5)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_val, b.y_val)
    assert not np.array_equal(a.x_train, shape_captions(400, 16, seed=6).x_train)
    assert a.x_train.shape == (320, 16, 16, 3) and a.x_train.dtype == np.float32
    assert a.inputs.shape == (16, 16, 3) and a.targets.kind == "sequence"
    assert a.target_vocabulary == caption_vocabulary() and a.source_vocabulary is None
    texts = [a.target_vocabulary.decode(row) for row in np.concatenate([a.y_train, a.y_val])]
    above = np.mean([" above " in t for t in texts])
    assert 0.4 < above < 0.6  # a fair coin over 400 captions: 6 standard deviations wide


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"n": 0}, "n"),
        ({"n": 10, "size": 8}, "size"),
        ({"n": 10, "noise": 1.5}, "noise"),
        ({"n": 10, "validation_split": 0.0}, "validation_split"),
        ({"n": 10, "seed": -1}, "seed"),
        ({"n": 10**9}, "n"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(arguments, named):
    with pytest.raises(ValueError, match=f"`{named}`"):
        shape_captions(**arguments)
