"""Diagnostics that make the theory of sequence models visible.

`gradient_flow` measures how the gradient of a last-step loss reaches each
earlier step of a recurrent layer (the vanishing gradient of Hochreiter 1991
and Pascanu et al. 2013, and the constant error carousel of Hochreiter &
Schmidhuber 1997 that cures it); `plot_gradient_flow` draws several layers on
one log-scale figure. Both run on TensorFlow, JAX and PyTorch.

`plot_alignment` draws an attention or pointer matrix (rows: output steps,
columns: source positions) in grey scale, as in figure 3 of Bahdanau, Cho &
Bengio (2015).

`plot_positional_encoding` draws the sinusoidal encoding of Vaswani et al.
(2017) as a position × dimension heatmap; `position_similarity` measures how
similar a Vision Transformer's learned patch position embeddings are to one
another, on the patch grid, and `plot_position_similarity` draws that as in
figure 7 of Dosovitskiy et al. (2020).

`plot_gaze` draws a captioner's attention over the image regions for each
word, as in figures 2 and 3 of Xu et al. (2015); `gaze_on_objects` measures
it: the attention mass inside the box of the object each word names, beside
a uniform gaze's.

Example:

>>> from keras_seq.diagnostics import gradient_flow, plot_gradient_flow
>>> frame = gradient_flow(keras.layers.SimpleRNN(16), 100)
"""

from keras_seq.diagnostics.alignment import plot_alignment
from keras_seq.diagnostics.gaze import box_regions, gaze_on_objects, plot_gaze
from keras_seq.diagnostics.gradients import gradient_flow, plot_gradient_flow
from keras_seq.diagnostics.positions import (
    plot_position_similarity,
    plot_positional_encoding,
    position_similarity,
)

__all__ = [
    "box_regions",
    "gaze_on_objects",
    "gradient_flow",
    "plot_alignment",
    "plot_gaze",
    "plot_gradient_flow",
    "plot_position_similarity",
    "plot_positional_encoding",
    "position_similarity",
]
