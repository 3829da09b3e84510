"""Run stores for the Compare tests: runs of three model types, recorded without training.

`TINY_SPECS` holds a tiny spec of each model type (the tests that need a trained model train
one with the engine). `record_run` and `record_runs` write runs through the store's own API,
as the engine records them (spec, running, parameters, epochs, final metrics), for the tests
that view and compare runs, and for stores too big to train, such as 1,000 runs.
"""

from __future__ import annotations

from builder_ui.builders import load_spec
from builder_ui.engine.store import RunStore

# One tiny spec per model type: 96 training and 24 validation examples, one epoch.
TINY_SPECS = {
    "sequence_classifier": {
        "version": 2,
        "name": "tiny-gru",
        "task": {"type": "long_lag", "lag": 5, "n": 120, "encoding": "ids"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "gru", "units": 4},
            "embedding_dim": 4,
        },
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    },
    "seq2seq": {
        "version": 2,
        "name": "tiny-seq2seq",
        "task": {"type": "toy_translation", "n": 120, "min_len": 4, "max_len": 6},
        "model": {
            "type": "seq2seq",
            "architecture": {"type": "rnn", "cell": "lstm", "units": 8, "embedding_dim": 8},
        },
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    },
    "pointer_network": {
        "version": 2,
        "name": "tiny-pointer",
        "task": {"type": "sort_numbers", "length": 4, "n": 120},
        "model": {"type": "pointer_network", "units": 8, "cell": "lstm"},
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    },
}


# The final metrics each model type's builder gives, besides the loss (see `record_runs`).
_METRICS = {
    "sequence_classifier": lambda score: {"accuracy": score},
    "seq2seq": lambda score: {"bleu": 50 * score, "exact_match": 0.0, "token_accuracy": score},
    "pointer_network": lambda score: {
        "accuracy": score,
        "pointer_accuracy": score / 2,
        "sequence_accuracy": score / 4,
    },
}


def full_spec(model_type: str, **train: object) -> dict:
    """The tiny spec of `model_type` with every default filled in, as the engine stores it."""
    document = TINY_SPECS[model_type]
    document = {**document, "train": {**document["train"], **train}}
    return load_spec(document).model_dump(mode="json")


def record_run(
    store: RunStore, model_type: str, score: float, *, epochs: int = 2, params: int = 100, **train
) -> str:
    """One finished run of `model_type`'s tiny spec (with `train` fields changed), written as
    the engine writes one: created, running on the CPU, its parameters, `epochs` epochs of
    logs, then done with its final validation metrics, named as the model type's builder names
    them, whose accuracy (or token accuracy) is `score`; returns its id."""
    run_id = store.create_run(full_spec(model_type, epochs=epochs, **train))
    store.set_status(run_id, "running", backend="tensorflow", device="CPU")
    store.update(run_id, params=params, precision="float32")
    final = _METRICS[model_type](score)
    for epoch in range(1, epochs + 1):
        # Each validation metric climbs to its final value at the last epoch, as logged.
        rising = {f"val_{name}": value * epoch / epochs for name, value in final.items()}
        store.append_epoch(run_id, epoch, {"loss": 1.0 / epoch, "val_loss": 1.1 / epoch, **rising})
    metrics = {"loss": 1.0 - score, **final}
    store.finish(run_id, "done", metrics=metrics, wall_time=1.5, examples_per_sec=100.0)
    return run_id


def record_runs(store: RunStore, count: int, *, epochs: int = 2) -> list[str]:
    """`count` finished runs cycling through the three model types and five learning rates.

    Each is written as the engine writes one: created, running on the CPU, its
    parameters, `epochs` epochs of logs, then done with its final validation
    metrics, named as each model type's builder names them. The i-th run's accuracy
    is `i / count` (so a range filter has a known answer); translators have no
    accuracy but BLEU, exact match and token accuracy.
    """
    types = list(TINY_SPECS)
    return [
        record_run(
            store,
            types[i % len(types)],
            i / count,
            epochs=epochs,
            params=100 + i,
            learning_rate=(0.001, 0.003, 0.01, 0.03, 0.1)[i % 5],
        )
        for i in range(count)
    ]


def record_failed_run(store: RunStore, model_type: str, error: Exception, depth: int = 30) -> str:
    """A run of `model_type` that failed in its first epoch, recorded as the engine records
    one: its error `Type: message`, and the traceback in its `traceback.txt` artifact (here a
    real traceback `depth` calls deep); returns its id."""
    import traceback

    from builder_ui.engine.artifacts import TRACEBACK_FILE

    # Two functions in turn: Python folds a run of identical frames into one line.
    def fail(level: int) -> None:
        if level == 0:
            raise error
        fail_again(level - 1)

    def fail_again(level: int) -> None:
        fail(level)

    run_id = store.create_run(full_spec(model_type), name="broken-run")
    store.set_status(run_id, "running", backend="tensorflow", device="CPU")
    try:
        fail(depth)
    except Exception:
        with store.atomic_artifact(run_id, TRACEBACK_FILE) as path:
            path.write_text(traceback.format_exc(), encoding="utf-8")
    store.finish(run_id, "failed", error=f"{type(error).__name__}: {error}", wall_time=0.3)
    return run_id
