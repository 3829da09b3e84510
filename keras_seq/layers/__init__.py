"""Keras 3 layers for sequence models, each registered under the package `keras_seq`.

Recurrent: `CECLSTMCell` and `CECLSTM`, the 1997 LSTM with its constant error
carousel and its gated variants. The vanilla RNN and the GRU are Keras's own
`keras.layers.SimpleRNN` and `keras.layers.GRU`.
"""

from keras_seq.layers.cec_lstm import CECLSTM, CECLSTMCell

__all__ = ["CECLSTM", "CECLSTMCell"]
