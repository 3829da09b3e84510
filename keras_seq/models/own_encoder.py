"""An encoder model of one's own under a library decoder: what the assembled seq2seq share.

    source ids (batch, S) ─▶ encoder (any keras.Model) ─▶ {"memory": (batch, S, d_enc),
                                                           "state":  (batch, units)}

`AssembledSeq2Seq` (a `RecurrentDecoder`) and `AssembledTransformerSeq2Seq`
(Transformer decoder blocks) take the encoder a user assembled (the Build
tab's graph, or any functional model) and keep the decoder, the decoding
contract and the scoring of their architecture. `OwnEncoder` holds what they
share: taking the encoder (or its serialized config, when loading), checking
its input and outputs, leaving the source embedding to it, and saving it.
"""

from __future__ import annotations

import keras

from keras_seq import argument_checks

ENCODER_OUTPUTS = ("memory", "state")


def encoder_model(encoder, what):
    """`encoder` as a `keras.Model`, deserialized when it is a config (a saved model's), or a
    `ValueError` naming the argument `encoder` and `what` it must be."""
    if isinstance(encoder, dict):  # from a config: a serialized functional model
        encoder = keras.saving.deserialize_keras_object(encoder)
    if not isinstance(encoder, keras.Model):
        raise argument_checks.invalid("encoder", what, encoder)
    return encoder


def encoder_outputs(encoder):
    """The output specs of an encoder model by name (`"memory"`, `"state"`), or a
    `ValueError` naming the argument `encoder` when its output is not such a dict."""
    outputs = encoder.output
    if not isinstance(outputs, dict) or not outputs or set(outputs) - set(ENCODER_OUTPUTS):
        got = sorted(outputs) if isinstance(outputs, dict) else type(outputs).__name__
        raise argument_checks.invalid(
            "encoder", "a model whose output is a dict of 'memory' and/or 'state'", got
        )
    return outputs


class OwnEncoder:
    """A `Seq2Seq` mix-in whose encoder is a `keras.Model` given to the constructor.

    The subclass calls `_take_encoder(encoder)` before `Seq2Seq.__init__`, then
    `_check_encoder(...)` from `_check_arguments`, and assigns `self.encoder =
    self._given_encoder[0]` in `_make_layers` (on PyTorch a module may not be
    assigned before `keras.Model.__init__` has run, so it waits in a tuple).
    """

    def _take_encoder(self, encoder):
        what = "a keras.Model from source ids to {'memory', 'state'}"
        self._given_encoder = (encoder_model(encoder, what),)

    def _encoder_specs(self):
        """The encoder's output specs by name (`"memory"`, `"state"`), checked."""
        return encoder_outputs(self._given_encoder[0])

    def _check_encoder(self, memory_reason=None):
        """One `(batch, S)` input; a `memory` of rank 3 when `memory_reason` says it is read.

        Returns:
            The output specs by name.
        """
        outputs = self._encoder_specs()
        inputs = self._given_encoder[0].inputs
        if len(inputs) != 1 or len(inputs[0].shape) != 2:
            shapes = [tuple(tensor.shape) for tensor in inputs]
            raise argument_checks.invalid("encoder", "one input of (batch, S) source ids", shapes)
        memory = outputs.get("memory")
        if memory_reason is not None and memory is None:
            raise argument_checks.invalid(
                "encoder", f"a 'memory' output (batch, S, d_enc) {memory_reason}", sorted(outputs)
            )
        if memory is not None and len(memory.shape) != 3:
            raise argument_checks.invalid(
                "encoder", "'memory' of shape (batch, S, d_enc)", memory.shape
            )
        return outputs

    def _embedding(self, role, vocab):
        """The target's embedding; the source is embedded by the encoder itself."""
        return None if role == "source" else super()._embedding(role, vocab)

    def _encoder_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder)}
