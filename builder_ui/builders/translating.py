"""How a model that translates trains and is scored: the seq2seq types and translating graphs.

Training is teacher-forced: `model.fit` gets `{"source": x, "target": y}` and
`y`, compiled with a cross-entropy and a token accuracy that leave padding
out (`token_accuracy`). `evaluate` also decodes the validation sources
greedily (`keras_seq.models.Greedy().compile`) and scores the
outputs against the validation targets (decoded by the target vocabulary, so
words unseen in training read `<unk>` on both sides):

- `bleu`: corpus BLEU, 0 to 100 (`keras_seq.metrics.corpus_bleu`);
- `exact_match`: the fraction of outputs equal to their target.

`Translating` holds that for every builder whose models map source ids to
target ids (`seq2seq`, and a `graph` with a decoder block).
"""

from __future__ import annotations

import keras
import numpy as np

from builder_ui.builders import memory
from builder_ui.builders.base import ModelBuilder
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedTokenAccuracy, corpus_bleu, exact_match
from keras_seq.models import Greedy


class Translating(ModelBuilder):
    """Teacher-forced training and BLEU / exact-match scoring (see the module docstring)."""

    def fit_data(self, params, task):
        return (
            {"source": task.x_train, "target": task.y_train},
            task.y_train,
            {"source": task.x_val, "target": task.y_val},
            task.y_val,
        )

    def compile_args(self, params, task):
        return {"loss": MaskedSparseCategoricalCrossentropy(), "metrics": [MaskedTokenAccuracy()]}

    def monitor_metric(self, params, task):
        return "val_token_accuracy"

    def evaluate(self, model, params, prepared):
        metrics = prepared.keras_metrics(model)
        task = prepared.task
        decode = Greedy().compile(model, task.targets.length)
        batch = memory.decode_batch(prepared.spec.train.batch_size)  # as the estimate counts
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
