"""What the ONNX and LiteRT (TensorFlow Lite) files of a trained model hold, for runtimes
without Keras: the graph both converters get (`onnx_file`, `litert_file`).

    onnx_file.write_onnx(model, path)                      a model's forward pass, for onnxruntime
    onnx_file.write_onnx(seq2seq, path, decode_length=L)   an encoder–decoder's decode loop
    onnx_file.write_onnx(seq2seq, path, decode_length=L, decoding=Greedy())     greedy, on request
    litert_file.write_litert(model, path, batch_size=B)    the same, for the LiteRT interpreter
    litert_file.write_litert(seq2seq, path, batch_size=B, decode_length=L, decoding=Beam(width=2))

What goes into the file:

- A model with one forward pass (sequence classifiers and regressors, the
  Vision Transformer, graph models, the pointer network's teacher-forced
  pass): its `call` with `training=False`. The inputs are named as the Keras
  inputs (`sequence`, `image`, ...; the pointer network's two are `sequence`
  and `pointers`), masks included: a padded token is masked in the file as in
  Keras, since the mask is computed from the ids inside the graph.
- An encoder–decoder (a model with `encode` and `decode_step`): its
  decoding as `decoding` says, `keras_seq.models.Beam()` (beam search of
  width 4 with length penalty 0.6, `beam_search`) unless told otherwise, or
  `Greedy()` (`greedy_decode`), the whole loop in the file (an ONNX `Loop`,
  a TFLite `WHILE`; beam search's top-k over the flattened `K × V`
  candidate scores, its gathers of each survivor's parent state and its
  selections convert to builtin operators of both formats). Input
  `source`, int32 `(batch, S)` ids right-padded with PAD (0); outputs `ids`
  int32 `(batch, decode_length)` (tokens, END, then PAD), `scores` float32
  `(batch,)` (the log-probability of each translation, not length-normalised)
  and `lengths` int32 `(batch,)` (tokens, END included): what
  `decoding.decode(model, source, decode_length)` gives in Keras. Text does
  not go in: ONNX has no string operators and LiteRT's builtin operators no
  tokeniser, so the SavedModel's `translate` signature has no counterpart;
  ids come from, and go back to
  text through, the run's vocabularies (`Vocabulary.encode` / `decode`).
  The ONNX file carries them in its metadata, under `VOCABULARIES_KEY`
  (the JSON of `Translator.vocabularies_json`): a subword vocabulary is a
  SentencePiece model there, so `sentencepiece` and `onnxruntime` alone
  translate text with it; and how it decodes under `DECODING_KEY`
  (`Translator.decoding_json`). A LiteRT file does not carry them.

Both need the TensorFlow backend and a model in float32.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_seq.models import strategies

INT32_MIN = int(np.iinfo(np.int32).min)


class ConversionError(ValueError):
    """A model that cannot be written in a format; the message says why."""


def check_exportable(format: str, precision: str | None) -> None:
    """Refuse, with the reason, what neither converter is given: another backend, not float32.

    Args:
        format: `"onnx"` or `"litert"`.
        precision: The dtype policy the model trained under (`"float32"`,
            `"mixed_float16"`, ...; None for float32).
    """
    label = "ONNX" if format == "onnx" else "LiteRT"
    if keras.backend.backend() != "tensorflow":
        raise ConversionError(
            f"the {label} export converts a TensorFlow graph, and the Keras backend is "
            f"{keras.backend.backend()!r}: run it with KERAS_BACKEND=tensorflow."
        )
    if precision not in (None, "float32"):
        raise ConversionError(
            f"it trained with mixed precision ({precision!r}), and an {label} file is a "
            "float32 graph (Keras's export needs the 'float32' dtype policy): train it with "
            "train.mixed_precision: float32, or export 'keras' or 'savedmodel'."
        )


# --- what is converted ------------------------------------------------------------------------


def _input_specs(model: Any, batch_size: int | None) -> Any:
    """`tf.TensorSpec`s shaped like the model's inputs (same structure), the batch axis fixed."""

    def spec(tensor):
        return tf.TensorSpec((batch_size, *tensor.shape[1:]), tensor.dtype, name=tensor.name)

    return keras.tree.map_structure(spec, model.input)


def _forward(model: Any):
    """The model's inference call, its outputs named `output_0`, `output_1`, ... (as LiteRT's)."""

    def serve(inputs):
        outputs = keras.tree.flatten(model(inputs, training=False))
        return {f"output_{index}": output for index, output in enumerate(outputs)}

    return serve


def _strategy(model: Any, decode_length: int | None, decoding: Any) -> Any:
    """The decoding of an encoder–decoder's file: `decoding` checked, `Beam()` for None.

    A model without a decode loop (`decode_length` None) takes no decoding.
    """
    if decode_length is None:
        if decoding is not None:
            raise ValueError(
                "Received an invalid value for argument `decoding`, expected None for a model "
                f"written without a decode loop (no decode_length), got {decoding!r}."
            )
        return None
    return strategies.exportable(strategies.Beam() if decoding is None else decoding, model)


def _decoder(model: Any, decode_length: int, strategy: Any):
    """`strategy`'s decoding as a function of the source ids: `{ids, scores, lengths}`."""

    def serve(source):
        result = strategy.decode(model, source, decode_length)
        return {"ids": result.ids, "scores": result.scores, "lengths": result.lengths}

    return serve


def _source_spec(batch_size: int | None) -> Any:
    return tf.TensorSpec((batch_size, None), tf.int32, name="source")
