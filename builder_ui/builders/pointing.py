"""How a model that points at input positions trains and is scored (Vinyals et al. 2015).

It trains with teacher forcing: `model.fit` gets `{"sequence": x, "pointers": y}`
and `y`, and learns each step's distribution over the input positions.
`evaluate` also decodes the validation split greedily (`PointerNetwork.decode`,
which feeds back its own choices) and reports:

- `pointer_accuracy`: the fraction of output steps that point where the
  target does;
- `sequence_accuracy`: the fraction of sequences decoded exactly (for
  `sort_numbers`, sorted correctly).

`Pointing` holds that for the `pointer_network` type and for a `graph` with a
`PointerDecoder` block.
"""

from __future__ import annotations

import numpy as np

from builder_ui.builders.base import ModelBuilder


class Pointing(ModelBuilder):
    """Teacher-forced training and greedy-decoding scores (see the module docstring)."""

    def fit_data(self, params, task):
        return (
            {"sequence": task.x_train, "pointers": task.y_train},
            task.y_train,
            {"sequence": task.x_val, "pointers": task.y_val},
            task.y_val,
        )

    def evaluate(self, model, params, prepared):
        metrics = prepared.keras_metrics(model)
        x_val, y_val = prepared.task.x_val, prepared.task.y_val
        batch = max(prepared.spec.train.batch_size, 256)
        decoded = np.concatenate(
            [model.decode(x_val[start : start + batch]) for start in range(0, len(x_val), batch)]
        )
        metrics["pointer_accuracy"] = float(np.mean(decoded == y_val))
        metrics["sequence_accuracy"] = float(np.mean(np.all(decoded == y_val, axis=1)))
        return metrics
