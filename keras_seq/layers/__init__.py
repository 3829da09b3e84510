"""Keras 3 layers for sequence models, each registered under the package `keras_seq`.

Recurrent: `CECLSTMCell` and `CECLSTM`, the 1997 LSTM with its constant error
carousel and its gated variants. The vanilla RNN and the GRU are Keras's own
`keras.layers.SimpleRNN` and `keras.layers.GRU`.

Attention: `BahdanauAttention`, `LuongAttention`, `ScaledDotProductAttention`, `PointerAttention`
(one calling convention, `layer(query, value, key=None, ...)`; masks in `layers.masks`).

Transformer: encoder and decoder blocks, positional encodings, the ViT's patches and class token,
and the pooling of a sequence into one vector (`ClassTokenPooling`, `MaskedMeanPooling`,
`FinalStatePooling`).

Sequence to sequence: `RecurrentDecoder`, an RNN decoder that owns its loop over
time and reads the encoder through Bahdanau or Luong attention (or not at all),
and `ReverseWithinLength`, the source reversal of Sutskever et al. (2014).
"""

from keras_seq.layers import masks as masks
from keras_seq.layers.bahdanau_attention import BahdanauAttention
from keras_seq.layers.cec_lstm import CECLSTM, CECLSTMCell
from keras_seq.layers.luong_attention import LuongAttention
from keras_seq.layers.patches import ClassToken, PatchEmbedding
from keras_seq.layers.pointer_attention import PointerAttention
from keras_seq.layers.pooling import ClassTokenPooling, FinalStatePooling, MaskedMeanPooling
from keras_seq.layers.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from keras_seq.layers.recurrent_decoder import RecurrentDecoder
from keras_seq.layers.reverse_within_length import ReverseWithinLength
from keras_seq.layers.scaled_dot_product_attention import ScaledDotProductAttention
from keras_seq.layers.transformer_decoder import TransformerDecoderBlock
from keras_seq.layers.transformer_encoder import TransformerEncoderBlock

__all__ = [
    "CECLSTM",
    "BahdanauAttention",
    "CECLSTMCell",
    "ClassToken",
    "ClassTokenPooling",
    "FinalStatePooling",
    "LearnedPositionalEmbedding",
    "LuongAttention",
    "MaskedMeanPooling",
    "PatchEmbedding",
    "PointerAttention",
    "RecurrentDecoder",
    "ReverseWithinLength",
    "ScaledDotProductAttention",
    "SinusoidalPositionalEncoding",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
]
