"""`seq2seq(...)`: one call that builds an RNN or a Transformer encoder–decoder.

    architecture="rnn"          ─▶ RNNSeq2Seq          (keras_seq.models.rnn_seq2seq)
    architecture="transformer"  ─▶ TransformerSeq2Seq  (keras_seq.models.transformer_seq2seq)

Both are `Seq2Seq`s (`keras_seq.models.seq2seq_base`): the same training
input, the same `encode` / `decode_step` contract, so greedy decoding, beam
search, `Translator` and SavedModel export take either.
"""

from __future__ import annotations

from keras_seq import argument_checks
from keras_seq.layers.cells import check_cell
from keras_seq.layers.recurrent_decoder import check_attention, check_input_feeding
from keras_seq.models.rnn_seq2seq import RNNSeq2Seq
from keras_seq.models.transformer_seq2seq import POSITIONS, TransformerSeq2Seq

__all__ = ["ARCHITECTURES", "seq2seq"]

ARCHITECTURES = ("rnn", "transformer")


def seq2seq(
    source_vocab_size,
    target_vocab_size,
    *,
    architecture="rnn",
    cell="lstm",
    units=64,
    num_layers=1,
    bidirectional=False,
    attention=None,
    attention_units=None,
    input_feeding=False,
    reverse_source=False,
    embedding_dim=64,
    num_heads=4,
    ff_dim=128,
    norm_first=False,
    max_length=128,
    positions="sinusoidal",
    dropout=0.0,
    name="seq2seq",
    dtype=None,
):
    """Builds an uncompiled `RNNSeq2Seq` or `TransformerSeq2Seq` from source to target ids.

    `architecture` picks the class; the other arguments are those of that
    class (see it for each), with the model's `name` and `dtype` policy
    (e.g. `"mixed_float16"`). `num_layers`, `embedding_dim`,
    `reverse_source` and `dropout` are both classes'. Arguments of the other
    architecture are checked and ignored (`cell`, `units`, `bidirectional`,
    `attention`, `attention_units` and `input_feeding` are the RNN's;
    `num_heads`, `ff_dim`, `norm_first`, `max_length` and `positions` the
    Transformer's), except that a Transformer refuses `attention`,
    `attention_units` and `bidirectional`, which it cannot honour.

    Returns:
        A `Seq2Seq`. Compile it with `compile_for(model, task.targets)` and
        fit it on `{"source": task.x_train, "target": task.y_train}` against
        `task.y_train`; decode with `keras_seq.models.greedy_decode` or
        `beam_search`. It saves to and loads from `.keras` with
        `safe_mode=True`.

    Example:

    >>> model = seq2seq(100, 120, attention="bahdanau", units=32, bidirectional=True)
    >>> type(model).__name__, model.decoder.state_names
    ('RNNSeq2Seq', ('h_0', 'c_0'))
    >>> transformer = seq2seq(100, 120, architecture="transformer", num_layers=2)
    >>> type(transformer).__name__, transformer.max_decode_length
    ('TransformerSeq2Seq', 128)

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """
    architecture = argument_checks.one_of("architecture", architecture, ARCHITECTURES)
    shared = {
        "num_layers": num_layers,
        "embedding_dim": embedding_dim,
        "reverse_source": reverse_source,
        "dropout": dropout,
        "name": name,
        "dtype": dtype,
    }
    if architecture == "rnn":
        _check_ignored_transformer_arguments(num_heads, ff_dim, norm_first, max_length, positions)
        return RNNSeq2Seq(
            source_vocab_size,
            target_vocab_size,
            cell=cell,
            units=units,
            bidirectional=bidirectional,
            attention=attention,
            attention_units=attention_units,
            input_feeding=input_feeding,
            **shared,
        )
    _check_ignored_rnn_arguments(
        cell, units, bidirectional, attention, attention_units, input_feeding
    )
    return TransformerSeq2Seq(
        source_vocab_size,
        target_vocab_size,
        num_heads=num_heads,
        ff_dim=ff_dim,
        norm_first=norm_first,
        max_length=max_length,
        positions=positions,
        **shared,
    )


def _check_ignored_transformer_arguments(num_heads, ff_dim, norm_first, max_length, positions):
    """An RNN ignores these, but refuses a value no model could take."""
    argument_checks.positive_int("num_heads", num_heads, argument_checks.MAX_UNITS)
    argument_checks.positive_int("ff_dim", ff_dim, argument_checks.MAX_UNITS)
    argument_checks.boolean("norm_first", norm_first)
    argument_checks.positive_int("max_length", max_length, 2**20)
    argument_checks.one_of("positions", positions, POSITIONS)


def _check_ignored_rnn_arguments(
    cell, units, bidirectional, attention, attention_units, input_feeding
):
    """A Transformer ignores these, and refuses the attention and direction it cannot honour."""
    check_cell(cell)
    argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
    argument_checks.boolean("bidirectional", bidirectional)
    check_attention(attention)
    check_input_feeding(input_feeding, attention)
    for argument, value in (("attention", attention), ("attention_units", attention_units)):
        if value is not None:
            raise argument_checks.invalid(
                argument, "None with architecture='transformer' (it attends by design)", value
            )
    if bidirectional:
        raise argument_checks.invalid(
            "bidirectional",
            "False with architecture='transformer' (its encoder already reads both ways)",
            bidirectional,
        )
