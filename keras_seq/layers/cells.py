"""The catalogue of recurrent cells a model may be built from, by name.

    "simple"   keras.layers.SimpleRNNCell / SimpleRNN   (Elman 1990)
    "gru"      keras.layers.GRUCell / GRU               (Cho et al. 2014)
    "lstm"     keras.layers.LSTMCell / LSTM             (the LSTM with a forget gate)
    "cec_lstm" keras_seq CECLSTMCell / CECLSTM          (Hochreiter & Schmidhuber 1997)

`make_cell` builds the one-step cell (what `RecurrentDecoder` stacks),
`make_rnn_layer` the layer that runs it over a sequence (what an encoder
stacks); `states_per_layer` and `cell_parameter_count` describe either.
"""

from __future__ import annotations

import keras

from keras_seq import argument_checks
from keras_seq.layers.cec_lstm import CECLSTM, CECLSTMCell

CELLS = ("simple", "gru", "lstm", "cec_lstm")

_CELL_CLASSES = {
    "simple": keras.layers.SimpleRNNCell,
    "gru": keras.layers.GRUCell,
    "lstm": keras.layers.LSTMCell,
    "cec_lstm": CECLSTMCell,
}

_LAYER_CLASSES = {
    "simple": keras.layers.SimpleRNN,
    "gru": keras.layers.GRU,
    "lstm": keras.layers.LSTM,
    "cec_lstm": CECLSTM,
}

# Cells with a memory cell carry two states per layer, `h` and `c`.
_TWO_STATE_CELLS = ("lstm", "cec_lstm")


def check_cell(value):
    """Returns `value` if it names a cell in `CELLS`, else raises."""
    return argument_checks.one_of("cell", value, CELLS)


def make_cell(cell, units, name, dtype=None):
    """A fresh one-step Keras cell of kind `cell` (see `CELLS`) with `units` outputs."""
    return _CELL_CLASSES[cell](units, name=name, dtype=dtype)


def make_rnn_layer(cell, units, **kwargs):
    """A fresh recurrent layer of kind `cell` (see `CELLS`): `keras.layers.LSTM(units, ...)`."""
    return _LAYER_CLASSES[cell](units, **kwargs)


def states_per_layer(cell):
    """How many state tensors one layer of `cell` carries: 2 for the LSTMs, else 1."""
    return 2 if cell in _TWO_STATE_CELLS else 1


def cell_parameter_count(cell, input_dim, units):
    """An upper bound on one cell's weights (4 gate blocks, kernel, recurrent kernel, biases)."""
    blocks = {"simple": 1, "gru": 3, "lstm": 4, "cec_lstm": 4}[cell]
    return blocks * units * (input_dim + units + 2) + 3 * units  # peepholes at most
