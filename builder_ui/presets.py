"""Starting points for the builder: one experiment spec per stage of the arc, plus plugins.

Each preset is a complete, valid spec (the same documents as
`examples/specs/<key>.yaml` where that file exists; a test keeps them equal),
in the order of the arc:

    vanilla RNN ─▶ 1997 LSTM ─▶ forget gate ─▶ peepholes ─▶ GRU
      ─▶ seq2seq ─▶ + Bahdanau ─▶ + Luong ─▶ Transformer ─▶ ViT ─▶ pointer network

Every model type a plugin registered (`builder_ui.registry`) gets a preset
too: its default fields on the first built-in task whose inputs and targets
it reads, so that it shows in the app like the built-ins.

Nothing here imports Keras.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Preset:
    """A named experiment spec to start from.

    Attributes:
        key: Stable identifier (`"lstm_1997"`), the example file's stem.
        label: What the app shows (`"2 · 1997 LSTM"`).
        description: One line on what the stage adds.
        spec: The spec document (a dict; `presets.spec(key)` gives a copy).
        plugin: Whether it comes from a plugin's model type.
    """

    key: str
    label: str
    description: str
    spec: dict[str, Any] = field(repr=False)
    plugin: bool = False


# The arc's specs, as in examples/specs/<key>.yaml (tests/test_handlers.py checks that they
# are equal, so a change to an example is made here too).
_SPECS: dict[str, dict[str, Any]] = {
    "vanilla_rnn": {
        "version": 1,
        "name": "vanilla-rnn",
        "task": {"type": "long_lag", "lag": 200, "n": 2000, "encoding": "one_hot"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "simple", "units": 16},
        },
        "train": {
            "epochs": 3,
            "batch_size": 16,
            "optimizer": "adam",
            "learning_rate": 0.01,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "lstm_1997": {
        "version": 1,
        "name": "lstm-1997",
        "task": {"type": "long_lag", "lag": 200, "n": 2000, "encoding": "one_hot"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {
                "type": "rnn",
                "cell": "cec_lstm",
                "units": 16,
                "forget_gate": False,
                "peephole": False,
            },
        },
        "train": {
            "epochs": 3,
            "batch_size": 16,
            "optimizer": "adam",
            "learning_rate": 0.01,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "lstm_forget_gate": {
        "version": 1,
        "name": "lstm-forget-gate",
        "task": {"type": "adding_problem", "length": 30, "n": 1000},
        "model": {
            "type": "sequence_regressor",
            "encoder": {"type": "rnn", "cell": "cec_lstm", "units": 16, "forget_gate": True},
        },
        "train": {
            "epochs": 10,
            "batch_size": 32,
            "optimizer": "adam",
            "learning_rate": 0.01,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "peephole_lstm": {
        "version": 1,
        "name": "peephole-lstm",
        "task": {"type": "long_lag", "lag": 20, "n": 1000, "encoding": "one_hot"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {
                "type": "rnn",
                "cell": "cec_lstm",
                "units": 16,
                "forget_gate": True,
                "peephole": True,
            },
        },
        "train": {
            "epochs": 10,
            "batch_size": 32,
            "optimizer": "adam",
            "learning_rate": 0.01,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "gru": {
        "version": 1,
        "name": "gru",
        "task": {"type": "long_lag", "lag": 20, "n": 1000, "encoding": "ids"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "gru", "units": 16, "bidirectional": True},
            "embedding_dim": 8,
        },
        "train": {
            "epochs": 10,
            "batch_size": 32,
            "optimizer": "adam",
            "learning_rate": 0.01,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "seq2seq": {
        "version": 1,
        "name": "seq2seq",
        "task": {"type": "toy_translation", "n": 2000, "min_len": 5, "max_len": 12},
        "model": {
            "type": "seq2seq",
            "architecture": "rnn",
            "cell": "lstm",
            "units": 64,
            "embedding_dim": 32,
            "reverse_source": True,
        },
        "train": {
            "epochs": 10,
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.005,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "seq2seq_bahdanau": {
        "version": 1,
        "name": "seq2seq-bahdanau",
        "task": {"type": "toy_translation", "n": 2000, "min_len": 5, "max_len": 12},
        "model": {
            "type": "seq2seq",
            "architecture": "rnn",
            "cell": "gru",
            "units": 64,
            "embedding_dim": 32,
            "bidirectional": True,
            "attention": "bahdanau",
        },
        "train": {
            "epochs": 10,
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.005,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "seq2seq_luong": {
        "version": 1,
        "name": "seq2seq-luong",
        "task": {"type": "toy_translation", "n": 2000, "min_len": 5, "max_len": 12},
        "model": {
            "type": "seq2seq",
            "architecture": "rnn",
            "cell": "gru",
            "units": 64,
            "embedding_dim": 32,
            "bidirectional": True,
            "attention": "luong_general",
        },
        "train": {
            "epochs": 10,
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.005,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
    "transformer": {
        "version": 1,
        "name": "transformer",
        "task": {"type": "long_lag", "lag": 20, "n": 1000, "encoding": "ids"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {
                "type": "transformer",
                "embed_dim": 32,
                "num_heads": 4,
                "ff_dim": 64,
                "num_layers": 2,
                "norm_first": True,
                "positional": "sinusoidal",
                "pooling": "class_token",
            },
        },
        "train": {
            "epochs": 10,
            "batch_size": 32,
            "optimizer": "adam",
            "learning_rate": 0.001,
            "seed": 0,
        },
    },
    "transformer_translation": {
        "version": 1,
        "name": "transformer-translation",
        "task": {"type": "toy_translation", "n": 2000, "min_len": 5, "max_len": 12},
        "model": {
            "type": "seq2seq",
            "architecture": "transformer",
            "embed_dim": 64,
            "num_heads": 4,
            "ff_dim": 128,
            "num_layers": 1,
            "norm_first": True,
            "max_length": 32,
        },
        "train": {
            "epochs": 10,
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.002,
            "seed": 0,
        },
    },
    "vit": {
        "version": 1,
        "name": "vit",
        "task": {"type": "digits"},
        "model": {
            "type": "vision_transformer",
            "patch_size": 2,
            "embed_dim": 32,
            "num_heads": 4,
            "ff_dim": 64,
            "num_layers": 2,
        },
        "train": {
            "epochs": 10,
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.001,
            "seed": 0,
        },
    },
    "pointer_network": {
        "version": 1,
        "name": "pointer-network",
        "task": {"type": "sort_numbers", "length": 5, "n": 2000},
        "model": {"type": "pointer_network", "units": 32, "cell": "lstm"},
        "train": {
            "epochs": 10,
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.01,
            "clipnorm": 1.0,
            "seed": 0,
        },
    },
}

_STAGES: tuple[tuple[str, str, str], ...] = (
    (
        "vanilla_rnn",
        "1 · Vanilla RNN",
        "Elman's RNN on the long-lag task: the gradient through tanh units vanishes.",
    ),
    (
        "lstm_1997",
        "2 · 1997 LSTM",
        "Hochreiter & Schmidhuber: input and output gates around a constant error carousel.",
    ),
    (
        "lstm_forget_gate",
        "3 · LSTM with forget gate",
        "Gers, Schmidhuber & Cummins (2000): the cell can reset its carousel (adding problem).",
    ),
    (
        "peephole_lstm",
        "4 · Peephole LSTM",
        "Gers & Schmidhuber (2000): the gates also see the cell state.",
    ),
    (
        "gru",
        "5 · GRU",
        "Cho et al. (2014): two gates, no separate cell; bidirectional over token ids.",
    ),
    (
        "seq2seq",
        "6 · Seq2seq",
        "Sutskever et al. (2014): the source, read backwards, squeezed into one vector.",
    ),
    (
        "seq2seq_bahdanau",
        "7 · Seq2seq + Bahdanau attention",
        "Bahdanau, Cho & Bengio (2015): additive attention over every encoder state.",
    ),
    (
        "seq2seq_luong",
        "8 · Seq2seq + Luong attention",
        "Luong, Pham & Manning (2015): multiplicative attention on the decoder output.",
    ),
    (
        "transformer",
        "9 · Transformer",
        "Vaswani et al. (2017): self-attention reaches any position in one step.",
    ),
    (
        "transformer_translation",
        "9b · Transformer encoder–decoder",
        "Vaswani et al. (2017) on the translation task: self- and cross-attention.",
    ),
    (
        "vit",
        "10 · Vision Transformer",
        "Dosovitskiy et al. (2020): an image as a sequence of patches.",
    ),
    (
        "pointer_network",
        "11 · Pointer network",
        "Vinyals, Fortunato & Jaitly (2015): attention over the inputs is the output (sorting).",
    ),
)

_ARC: tuple[Preset, ...] = tuple(
    Preset(key, label, description, _SPECS[key]) for key, label, description in _STAGES
)

DEFAULT_PRESET = "vanilla_rnn"


def arc_presets() -> tuple[Preset, ...]:
    """The built-in presets, one per stage of the arc, in order."""
    return _ARC


def plugin_presets() -> list[Preset]:
    """One preset per model type registered by a plugin (not built in), on a fitting task.

    The task is the first built-in task type (in name order) that can be made
    with its default fields and whose input and target kinds the model reads;
    a plugin type that fits none gets no preset.
    """
    from builder_ui import registry

    found = []
    for name, info in registry.describe_types().items():
        if info["module"].startswith("builder_ui."):
            continue
        task = _fitting_task(info["input_kinds"], info["target_kinds"])
        if task is None:
            continue
        description = info["description"] or f"Model type {name!r} from a plugin."
        spec = {
            "version": 1,
            "name": f"plugin-{name}".replace("_", "-"),
            "task": task,
            "model": {"type": name},
            "train": {"epochs": 5, "batch_size": 32, "learning_rate": 0.001, "seed": 0},
        }
        found.append(Preset(f"plugin:{name}", f"Plugin · {name}", description, spec, plugin=True))
    return found


def _fitting_task(input_kinds: list[str], target_kinds: list[str]) -> dict[str, Any] | None:
    from pydantic import ValidationError

    from builder_ui import registry

    for task_type in registry.task_types():
        builder = registry.task_builder(task_type)
        if not type(builder).__module__.startswith("builder_ui."):
            continue
        try:
            params = builder.params.model_validate({"type": task_type})
        except ValidationError:
            continue  # needs a field without a default, e.g. a file path
        kinds = builder.kinds(params)
        if kinds is not None and kinds[0] in input_kinds and kinds[1] in target_kinds:
            return {"type": task_type}
    return None


def all_presets() -> list[Preset]:
    """The arc's presets, then the plugins'."""
    return [*_ARC, *plugin_presets()]


def get(key: str) -> Preset:
    """The preset with this key; `KeyError` naming the known keys otherwise."""
    for preset in all_presets():
        if preset.key == key:
            return preset
    known = ", ".join(p.key for p in all_presets())
    raise KeyError(f"No preset {key!r}; known presets: {known}.")


def spec(key: str) -> dict[str, Any]:
    """A fresh copy of the preset's spec document."""
    return copy.deepcopy(get(key).spec)


def by_label(label: str) -> Preset:
    """The preset the app lists under `label` (or whose key is `label`)."""
    for preset in all_presets():
        if label in (preset.label, preset.key):
            return preset
    raise KeyError(f"No preset labelled {label!r}.")
