"""`seq2seq`: an encoder–decoder from source token ids to target token ids.

Built by `keras_seq.models.seq2seq`. `architecture: rnn` is the model of
Sutskever et al. (2014), with the attention of Bahdanau et al. (2015) or
Luong et al. (2015) as options; `architecture: transformer` is the
encoder–decoder Transformer of Vaswani et al. (2017). Fields of the other
architecture are refused rather than ignored (they stay null).

Training is teacher-forced: `model.fit` gets `{"source": x, "target": y}` and
`y`, compiled with a cross-entropy and a token accuracy that leave padding
out (`token_accuracy`). `evaluate` also decodes the validation sources
greedily (`keras_seq.models.decoding.compile_decoder`) and scores the
outputs against the validation targets (decoded by the target vocabulary, so
words unseen in training read `<unk>` on both sides):

- `bleu`: corpus BLEU, 0 to 100 (`keras_seq.metrics.corpus_bleu`);
- `exact_match`: the fraction of outputs equal to their target.

Spec example:

    task: {type: toy_translation, n: 2000, max_len: 12}
    model: {type: seq2seq, architecture: rnn, cell: gru, units: 64, attention: bahdanau}
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.registry import register_model
from builder_ui.builders.sequence import Layers, Rate, Units
from builder_ui.specs import ModelParams

ATTENTIONS = ("bahdanau", "luong_dot", "luong_general", "luong_concat")
LUONG = ("luong_dot", "luong_general", "luong_concat")
MAX_LAYER_PARAMS = 2**31  # keras_seq.validation.MAX_LAYER_PARAMS

# The RNN's fields, its defaults when null, and the Transformer's.
RNN_DEFAULTS = {
    "cell": "lstm",
    "units": 64,
    "bidirectional": False,
    "input_feeding": False,
    "embedding_dim": 64,
}
TRANSFORMER_DEFAULTS = {
    "embed_dim": 64,
    "num_heads": 4,
    "ff_dim": 128,
    "norm_first": False,
    "max_length": 128,
    "positions": "sinusoidal",
}
RNN_ONLY = (*RNN_DEFAULTS, "attention", "attention_units")


class Seq2SeqParams(ModelParams):
    """The encoder–decoder's fields (see `keras_seq.models.Seq2Seq` for each).

    Args:
        architecture: `rnn` or `transformer`.
        num_layers: Encoder and decoder layers (RNN layers or blocks).
        reverse_source: Read each source backwards (Sutskever et al. 2014).
        dropout: Dropout rate.
        cell, units, bidirectional, attention, attention_units,
            input_feeding, embedding_dim: RNN only; null means the default
            (`lstm`, 64, false, no attention, `units`, false, 64).
        embed_dim, num_heads, ff_dim, norm_first, max_length, positions:
            Transformer only; null means the default (64, 4, 128, false,
            128, `sinusoidal`).
    """

    type: Literal["seq2seq"] = "seq2seq"
    architecture: Literal["rnn", "transformer"] = "rnn"
    num_layers: Layers = 1
    reverse_source: bool = False
    dropout: Rate = 0.0
    # RNN
    cell: Literal["simple", "gru", "lstm", "cec_lstm"] | None = None
    units: Units | None = None
    bidirectional: bool | None = None
    attention: Literal["bahdanau", "luong_dot", "luong_general", "luong_concat"] | None = None
    attention_units: Units | None = None
    input_feeding: bool | None = None
    embedding_dim: Units | None = None
    # Transformer
    embed_dim: Units | None = None
    num_heads: Units | None = None
    ff_dim: Units | None = None
    norm_first: bool | None = None
    max_length: Annotated[int, Field(ge=1, le=2**20)] | None = None
    positions: Literal["sinusoidal", "learned"] | None = None

    @model_validator(mode="after")
    def _fields_of_one_architecture(self) -> Seq2SeqParams:
        other = TRANSFORMER_DEFAULTS if self.architecture == "rnn" else RNN_ONLY
        for name in other:
            if getattr(self, name) is not None:
                raise ValueError(
                    f"{name}: not a field of architecture {self.architecture!r} (leave it out "
                    f"or null), got {getattr(self, name)!r}"
                )
        options = self.arguments()
        if self.architecture == "transformer":
            if options["embed_dim"] % options["num_heads"]:
                raise ValueError(
                    f"num_heads: expected a divisor of embed_dim={options['embed_dim']} (each "
                    f"head gets embed_dim / num_heads features), got {options['num_heads']}"
                )
            return self
        if options["bidirectional"] and options["units"] % 2:
            raise ValueError(
                f"units: expected an even number with bidirectional: true (each direction "
                f"has units / 2), got {options['units']}"
            )
        if self.attention_units is not None and self.attention not in ("bahdanau", "luong_concat"):
            raise ValueError(
                "attention_units: only with attention 'bahdanau' or 'luong_concat', got "
                f"attention {self.attention!r}"
            )
        if self.input_feeding and self.attention not in LUONG:
            raise ValueError(
                "input_feeding: only with a Luong attention (luong_dot, luong_general, "
                f"luong_concat), got attention {self.attention!r}"
            )
        return self

    def arguments(self) -> dict:
        """The keyword arguments of `keras_seq.models.seq2seq`, defaults filled in."""
        arguments = {
            "architecture": self.architecture,
            "num_layers": self.num_layers,
            "reverse_source": self.reverse_source,
            "dropout": self.dropout,
        }
        if self.architecture == "rnn":
            for name, default in RNN_DEFAULTS.items():
                value = getattr(self, name)
                arguments[name] = default if value is None else value
            arguments["attention"] = self.attention
            arguments["attention_units"] = self.attention_units
        else:
            for name, default in TRANSFORMER_DEFAULTS.items():
                value = getattr(self, name)
                arguments[name] = default if value is None else value
        return arguments


@register_model("seq2seq")
class Seq2SeqBuilder(ModelBuilder):
    params = Seq2SeqParams
    input_kinds = ("tokens",)
    target_kinds = ("sequence",)
    description = "Encoder–decoder: RNN (Sutskever 2014) with optional attention, or Transformer."

    def check(self, params, task):
        options = params.arguments()
        problems = []
        source, target = task.inputs.vocab_size, task.targets.vocab_size
        if params.architecture == "transformer":
            longest = max(task.inputs.length, task.targets.length)
            needed = longest if options["positions"] == "learned" else task.targets.length
            if options["max_length"] < needed:
                what = "source and target" if options["positions"] == "learned" else "target"
                problems.append(
                    (
                        "max_length",
                        f"expected at least {needed} (the longest {what} of task "
                        f"{task.name!r}), got {options['max_length']}",
                    )
                )
            width, field = options["embed_dim"], "embed_dim"
        else:
            width, field = options["embedding_dim"], "embedding_dim"
        if max(source, target) * width > MAX_LAYER_PARAMS:
            problems.append(
                (
                    field,
                    f"an embedding of {max(source, target):,} tokens × {width} would hold "
                    f"more than {MAX_LAYER_PARAMS:,} weights",
                )
            )
        return problems

    def build(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import seq2seq

        return seq2seq(task.inputs.vocab_size, task.targets.vocab_size, **params.arguments())

    def fit_data(self, params, task):
        return (
            {"source": task.x_train, "target": task.y_train},
            task.y_train,
            {"source": task.x_val, "target": task.y_val},
            task.y_val,
        )

    def compile_args(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import MaskedSparseCategoricalCrossentropy, MaskedTokenAccuracy

        return {"loss": MaskedSparseCategoricalCrossentropy(), "metrics": [MaskedTokenAccuracy()]}

    def monitor_metric(self, params, task):
        return "val_token_accuracy"

    def evaluate(self, model, params, prepared):
        # Keras loads on first use, not on import (specs and the app start without it).
        import keras

        from keras_seq.metrics import corpus_bleu, exact_match
        from keras_seq.models.decoding import compile_decoder

        metrics = prepared.keras_metrics(model)
        task = prepared.task
        decode = compile_decoder(model, task.targets.length)
        batch = max(prepared.spec.train.batch_size, 256)
        outputs = [
            keras.ops.convert_to_numpy(decode(task.x_val[start : start + batch]).ids)
            for start in range(0, len(task.x_val), batch)
        ]
        ids = np.concatenate(outputs)
        vocabulary = task.target_vocabulary
        hypotheses = [vocabulary.decode(row) for row in ids]
        references = [vocabulary.decode(row) for row in task.y_val]
        metrics["bleu"] = corpus_bleu(hypotheses, references)
        metrics["exact_match"] = exact_match(hypotheses, references)
        return metrics
