"""Diagnostics that make the theory of sequence models visible.

`gradient_flow` measures how the gradient of a last-step loss reaches each
earlier step of a recurrent layer (the vanishing gradient of Hochreiter 1991
and Pascanu et al. 2013, and the constant error carousel of Hochreiter &
Schmidhuber 1997 that cures it); `plot_gradient_flow` draws several layers on
one log-scale figure. Both run on TensorFlow, JAX and PyTorch.

Example:

>>> from keras_seq.diagnostics import gradient_flow, plot_gradient_flow
>>> frame = gradient_flow(keras.layers.SimpleRNN(16), 100)
"""

from keras_seq.diagnostics.gradients import gradient_flow, plot_gradient_flow

__all__ = ["gradient_flow", "plot_gradient_flow"]
