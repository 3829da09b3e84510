"""Small models around keras_seq layers, built from a task's description.

`recurrent_model(layer, task.inputs, task.targets)` puts one recurrent layer
between the task's input and a classification or regression head;
`compile_for(model, task.targets)` picks the loss and metric.

`pointer_network(input_features)` builds a `PointerNetwork` (Vinyals et al.
2015), whose outputs are positions of its input, for tasks such as
`sort_numbers`; `decode` is its greedy inference loop.

`transformer_classifier(vocab_size, max_length, num_classes)` classifies token
sequences with a Transformer encoder (Vaswani et al. 2017), pooling by a
masked mean or a class token; `vision_transformer(image_shape, patch_size, …)`
is the ViT of Dosovitskiy et al. (2020), for image tasks such as `digits`.

`conv_lstm_predictor(input_shape, output_frames)` predicts the next frames of
a video with stacked `keras.layers.ConvLSTM2D` layers (Shi et al. 2015), for
tasks such as `moving_shapes`; `frame_lstm_predictor(…, units=…)` is the
frame-flattening LSTM it is compared with, and `matched_units` gives that
LSTM the ConvLSTM's parameter count.

`seq2seq(source_vocab_size, target_vocab_size, architecture=…)` builds a
`Seq2Seq` encoder–decoder trained with teacher forcing: an `RNNSeq2Seq` (with
or without Bahdanau or Luong attention) or a `TransformerSeq2Seq`; `encode`
and `decode_step` are their shared inference contract. `compile_for` picks
`keras_seq.losses.MaskedSparseCategoricalCrossentropy` and
`keras_seq.metrics.MaskedTokenAccuracy`, which leave padding out, for targets
of kind "sequence". `AssembledSeq2Seq(source_vocab_size, target_vocab_size,
encoder)` puts the same recurrent decoder over an encoder model of one's own
(the Build tab's assembled graphs), `AssembledTransformerSeq2Seq` the
Transformer's decoder blocks. `ShowAttendTell(target_vocab_size,
image_shape)` is that decoder over the regions of an image (Xu et al. 2015):
a captioner, decoded by the same functions; `AssembledShowAttendTell(
target_vocab_size, encoder)` is its decoder over an image encoder of one's own.

`greedy_decode(model, source, max_length)`, `sample_decode(…, temperature,
top_k, top_p, seed)` and `beam_search(…, beam_width, length_penalty,
coverage_penalty)` decode any such model in one compiled loop
(`compile_decoder` compiles any of them for the backend); `Greedy()`,
`Beam(width, length_penalty, coverage_penalty)` and `Sample(temperature,
top_k, top_p, seed)` are those choices as values (`keras_seq.models.strategies`),
which the exports take;
`Translator(model, source_vocabulary, target_vocabulary)` turns text into
text with them, returns the attention alignment per output token, saves as
one `.keras` file and exports a TensorFlow SavedModel.
"""

from keras_seq.models.assembled_captioner import AssembledShowAttendTell
from keras_seq.models.assembled_seq2seq import AssembledSeq2Seq
from keras_seq.models.assembled_transformer import AssembledTransformerSeq2Seq
from keras_seq.models.captioner import ShowAttendTell
from keras_seq.models.compiling import compile_for
from keras_seq.models.decoding import (
    DecodeResult,
    beam_search,
    compile_decoder,
    greedy_decode,
    sample_decode,
)
from keras_seq.models.next_frame import (
    conv_lstm_parameters,
    conv_lstm_predictor,
    frame_lstm_parameters,
    frame_lstm_predictor,
    matched_units,
)
from keras_seq.models.pointer import PointerNetwork, pointer_network
from keras_seq.models.recurrent import recurrent_model
from keras_seq.models.rnn_seq2seq import RNNSeq2Seq
from keras_seq.models.seq2seq import seq2seq
from keras_seq.models.seq2seq_base import Seq2Seq
from keras_seq.models.strategies import Beam, Greedy, Sample
from keras_seq.models.transformer import transformer_classifier, vision_transformer
from keras_seq.models.transformer_seq2seq import TransformerSeq2Seq
from keras_seq.models.translator import Alignment, Translator

__all__ = [
    "Alignment",
    "AssembledSeq2Seq",
    "AssembledShowAttendTell",
    "AssembledTransformerSeq2Seq",
    "Beam",
    "DecodeResult",
    "Greedy",
    "PointerNetwork",
    "RNNSeq2Seq",
    "Sample",
    "Seq2Seq",
    "ShowAttendTell",
    "TransformerSeq2Seq",
    "Translator",
    "beam_search",
    "compile_decoder",
    "compile_for",
    "conv_lstm_parameters",
    "conv_lstm_predictor",
    "frame_lstm_parameters",
    "frame_lstm_predictor",
    "greedy_decode",
    "matched_units",
    "pointer_network",
    "recurrent_model",
    "sample_decode",
    "seq2seq",
    "transformer_classifier",
    "vision_transformer",
]
