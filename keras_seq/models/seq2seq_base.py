"""`Seq2Seq`, what every encoder–decoder here shares: the source, the shifted target, the contract.

    source ─▶ [reverse within length] ─▶ encoder ─▶ memory ─┐
    target ─▶ shift right (START first) ─▶ decoder ◀────────┘ ─▶ softmax

A `Seq2Seq` is a registered `keras.Model` subclass rather than a functional
graph because it has three entry points that share its layers: `call` (the
teacher-forced pass that `fit` trains), and `encode` / `decode_step`, the
inference contract that greedy decoding and beam search
(`keras_seq.models.decoding`) and `Translator` run in a compiled loop. Its
two architectures are subclasses, each with its own arguments:
`RNNSeq2Seq` (`keras_seq.models.rnn_seq2seq`) and `TransformerSeq2Seq`
(`keras_seq.models.transformer_seq2seq`); `keras_seq.models.seq2seq(...)`
builds either from one call.

Training input is `{"source": x, "target": y}` with `y` the target as a task
stores it (token ids, one END, PAD = 0 to the right). The model shifts `y`
right itself, so the decoder reads `START, y_1 … y_{T−1}` and predicts
`y_1 … y_T` (teacher forcing), and returns `(batch, T, target_vocab_size)`
probabilities. Padding is never counted: compile with
`compile_for(model, task.targets)` (or `MaskedSparseCategoricalCrossentropy`
and `MaskedTokenAccuracy`), then `model.fit({"source": x, "target": y}, y)`.

Inference:

    state = model.encode(source)                        # dict of batch-first tensors
    log_probs, state, attention = model.decode_step(tokens, state)

`tokens` is the previous output token `(batch,)` (START at the first step).
The step gives exactly the probabilities of the teacher-forced pass when fed
the same tokens (tested to 1e-5). Everything is `keras.ops`, with no Python
branching on tensor values, so both run inside `tf.function` and `jax.jit`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers import ReverseWithinLength

# The reserved ids of `keras_seq.tasks.Vocabulary`, the same in every vocabulary.
PAD_ID, START_ID = 0, 1

# Most tokens a vocabulary may hold; each adds a row to an embedding and a
# column to the output layer.
MAX_VOCABULARY = 2**22

# The deepest stack of layers the builder accepts.
MAX_LAYERS = 64


def vocab_size(name, value):
    """`value` if it is a vocabulary size (the 4 reserved ids and more), else raises."""
    return argument_checks.int_in_range(name, value, 4, MAX_VOCABULARY)


class Seq2Seq(keras.Model):
    """The base of the encoder–decoders: maps a source token sequence to a target one.

    For every subclass

        p(y_t | y_{<t}, x) = softmax(W_o o_t + b_o)

    where `o_t` is the decoder's output at step `t` and `W_o`, `b_o` the
    layer `output_projection`. This class holds what the architectures
    share: the vocabulary sizes, the optional source reversal (Sutskever et
    al. 2014), dropout, the shift of the target to the right, the output
    projection and the `call` / `encode` / `decode_step` contract. A subclass
    sets `architecture` and implements `_make_layers`, `_build_layers`,
    `teacher_forced`, `initial_state` and `step`. Build one with
    `keras_seq.models.seq2seq(...)`, `RNNSeq2Seq` or `TransformerSeq2Seq`:
    `Seq2Seq(...)` itself raises a `TypeError`, as it has no architecture.

    Args:
        source_vocab_size: Source token ids, the 4 reserved ids included.
        target_vocab_size: Target token ids, the 4 reserved ids included.
        reverse_source: Reverse each source within its length before
            encoding (Sutskever et al. 2014), in `call` and in `encode`.
            Default False.
        dropout: Dropout rate (where, the subclass says). Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`). A `dtype`
            policy such as `"mixed_float16"` reaches every sublayer; the
            probabilities and `decode_step`'s log-probabilities and attention
            are float32 whatever the policy.

    Call arguments:
        inputs: A dict with `"source"`, `(batch, S)` int ids, and
            `"target"`, `(batch, T)` int ids (ids, END, PAD), right-padded
            with PAD = 0.
        training: Whether dropout is applied.

    Returns:
        `(batch, T, target_vocab_size)` float32 probabilities of each target
        token given the source and the target tokens before it.

    Example:

    >>> from keras_seq.models import seq2seq
    >>> model = seq2seq(20, 30, units=16, attention="luong_general")
    >>> isinstance(model, Seq2Seq), model.architecture
    (True, 'rnn')
    >>> source = np.array([[5, 6, 7, 0]]); target = np.array([[8, 9, 2]])
    >>> tuple(model({"source": source, "target": target}).shape)
    (1, 3, 30)

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
    """

    # The architecture's name ("rnn", "transformer", …): set by each subclass.
    architecture = None

    def __init__(
        self, source_vocab_size, target_vocab_size, reverse_source=False, dropout=0.0, **kwargs
    ):
        if type(self) is Seq2Seq:
            raise TypeError(
                "Seq2Seq is the base class of the encoder–decoders: build one with "
                "keras_seq.models.seq2seq(...), RNNSeq2Seq(...) or TransformerSeq2Seq(...)."
            )
        # === Validation, before any weight exists ===
        self.source_vocab_size = vocab_size("source_vocab_size", source_vocab_size)
        self.target_vocab_size = vocab_size("target_vocab_size", target_vocab_size)
        self.reverse_source = argument_checks.boolean("reverse_source", reverse_source)
        self.dropout = argument_checks.rate("dropout", dropout)
        self._check_arguments()

        kwargs.setdefault("name", "seq2seq")
        super().__init__(**kwargs)

        # === Layers, named by their role ===
        if self.reverse_source:
            self.source_reversal = ReverseWithinLength(
                pad_value=PAD_ID, name="source_reversal", dtype=self.dtype_policy
            )
        self.source_embedding = self._embedding("source", self.source_vocab_size)
        self.target_embedding = self._embedding("target", self.target_vocab_size)
        self._make_layers()
        self.output_projection = keras.layers.Dense(
            self.target_vocab_size, name="output_projection", dtype=self.dtype_policy
        )
        tokens = (None, None)
        if self.reverse_source:
            self.source_reversal.build(tokens)
        self._build_layers()
        self.built = True

    # Subclass hooks ---------------------------------------------------------------

    def _check_arguments(self):
        """Raises on arguments that do not fit together (each one is checked already)."""

    def _check_budgets(self, output_width):
        """Refuses embeddings or an output projection past the weight budget of one layer.

        Both sides' embeddings are `vocab × embedding_dim` (subclasses set
        `embedding_dim` before calling the base constructor); the output
        projection maps `output_width` features to the target vocabulary.
        """
        for role, vocab in (("source", self.source_vocab_size), ("target", self.target_vocab_size)):
            argument_checks.parameter_budget(f"{role}_embedding", vocab * self.embedding_dim)
        projection = (output_width + 1) * self.target_vocab_size
        argument_checks.parameter_budget("output_projection", projection)

    def _embedding(self, role, vocab):
        """The `role` side's token embedding (`source_embedding` or `target_embedding`)."""
        return keras.layers.Embedding(
            vocab, self.embedding_dim, name=f"{role}_embedding", dtype=self.dtype_policy
        )

    def _make_layers(self):
        """Creates the encoder and decoder layers (not the embeddings or `output_projection`)."""
        raise NotImplementedError

    def _build_layers(self):
        """Creates every weight now, so that a new or reloaded model is ready to use."""
        raise NotImplementedError

    def teacher_forced(self, source, target, training):
        """The probabilities of `call` for int `source` `(batch, S)` and `target` `(batch, T)`."""
        raise NotImplementedError

    def initial_state(self, source):
        """What `encode` returns, for a `source` tensor."""
        raise NotImplementedError

    def step(self, tokens, state):
        """What `decode_step` returns, for a `tokens` tensor."""
        raise NotImplementedError

    # Shared pieces ----------------------------------------------------------------

    @property
    def max_decode_length(self):
        """The most steps `decode_step` can take; None if unbounded."""
        return None

    def _prepare_source(self, source):
        """The source ids as int32, reversed within length if asked, and their mask."""
        source = ops.cast(source, "int32")
        if self.reverse_source:
            source = self.source_reversal(source)
        return source, ops.not_equal(source, PAD_ID)

    @staticmethod
    def shift_right(target):
        """The decoder's input for `target`: START, then the target without its last token."""
        target = ops.cast(target, "int32")
        start = ops.full((ops.shape(target)[0], 1), START_ID, dtype="int32")
        return ops.concatenate([start, target[:, :-1]], axis=1)

    def _probabilities(self, outputs):
        logits = ops.cast(self.output_projection(outputs), "float32")
        return ops.softmax(logits, axis=-1)

    def _log_probabilities(self, outputs):
        logits = ops.cast(self.output_projection(outputs), "float32")
        return ops.log_softmax(logits, axis=-1)

    # Public entry points ----------------------------------------------------------

    def call(self, inputs, training=None):
        if not isinstance(inputs, dict) or set(inputs) != {"source", "target"}:
            raise ValueError(
                "Seq2Seq expects a dict {'source': (batch, S) ids, 'target': (batch, T) ids}, "
                f"got {type(inputs).__name__}"
                + (f" with keys {sorted(inputs)}." if isinstance(inputs, dict) else ".")
            )
        return self.teacher_forced(inputs["source"], inputs["target"], training)

    def encode(self, source):
        """Reads the source once and returns the decoder's state before its first step.

        Args:
            source: `(batch, S)` int token ids, right-padded with PAD = 0 (not
                reversed: `reverse_source` is applied here as in training).

        Returns:
            A dict of tensors, each with the batch as its first axis, among
            them `"source_mask"` bool `(batch, S)`; the subclass documents the
            others.
        """
        return self.initial_state(ops.convert_to_tensor(source))

    def decode_step(self, tokens, state):
        """One decoder step: the distribution of the next token given the previous one.

        Args:
            tokens: `(batch,)` int, the previous target token (START at the
                first step).
            state: The dict from `encode` or from the previous `decode_step`
                (rows may have been repeated or gathered, as beam search does).

        Returns:
            `(log_probs, state, attention)`: float32 `(batch,
            target_vocab_size)` log-probabilities of the next token, the new
            state (same keys, shapes and dtypes), and float32 `(batch, S)`
            attention weights over the source positions (in the order the
            model read them, so reversed with `reverse_source`).
        """
        return self.step(ops.convert_to_tensor(tokens), state)

    def get_config(self):
        return {
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "reverse_source": self.reverse_source,
            "dropout": self.dropout,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
