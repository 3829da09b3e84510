"""Show, Attend and Tell learns to caption shape_captions and looks at the object each word names.

Seeded and small: 2,000 images of 32 × 32, 12 epochs (about 15 s of training on
2 cores). Measured with this seed, after 10, 12 and 15 epochs: exact match 0.29,
0.44 and 0.57 of the 400 validation captions (chance is 1 in 2,048), and 0.52,
0.60 and 0.68 of each object word's attention on regions overlapping that
object's box, where a uniform gaze would put 0.19 and the other object gets
0.10, 0.095 and 0.08. The test trains 12 epochs, the fewest that clear the
floors with room for another CPU's rounding to take another path.
"""

import keras
import numpy as np
import pytest

from keras_seq.diagnostics import gaze_on_objects
from keras_seq.models import ShowAttendTell, compile_decoder, compile_for
from keras_seq.tasks import shape_captions

pytestmark = pytest.mark.large


@pytest.mark.timeout(400)  # a hang guard: about 25 s on two cores, 90 s at a load of 8
def test_captions_reach_a_floor_and_object_words_look_inside_their_boxes():
    task = shape_captions(2000, 32, seed=0)
    keras.utils.set_random_seed(0)
    model = ShowAttendTell(
        task.targets.vocab_size, task.inputs, filters=32, units=64, embedding_dim=32
    )
    compile_for(model, task.targets)
    model.fit(
        {"source": task.x_train, "target": task.y_train},
        task.y_train,
        epochs=12,
        batch_size=64,
        verbose=0,
    )
    ids = keras.ops.convert_to_numpy(compile_decoder(model, task.targets.length)(task.x_val).ids)
    vocabulary = task.target_vocabulary
    exact = np.mean(
        [
            vocabulary.decode(out) == vocabulary.decode(ref)
            for out, ref in zip(ids, task.y_val, strict=True)
        ]
    )
    assert exact >= 0.25, exact

    weights = keras.ops.convert_to_numpy(model.attention_weights(task.x_val, task.y_val))
    gaze = gaze_on_objects(
        weights,
        task.annotations["boxes_val"],
        task.annotations["word_objects_val"],
        model.region_grid,
        (32, 32),
    )
    assert gaze["mass"].mean() >= 2.0 * gaze["chance"].mean(), gaze["mass"].mean()
    assert gaze["mass"].mean() >= 3.0 * gaze["other"].mean()
