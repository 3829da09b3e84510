"""Starting points for the builder: one experiment spec per stage of the arc, plus plugins.

Each preset is a complete, valid spec, read from the YAML files shipped in this
package (`specs/<key>.yaml`; `examples/specs/` is a link to that folder, so the
command line's examples and the app's presets are the same files), in the
order of the arc:

    vanilla RNN ─▶ 1997 LSTM ─▶ forget gate ─▶ peepholes ─▶ GRU
      ─▶ seq2seq ─▶ + Bahdanau ─▶ + Luong ─▶ Transformer ─▶ ViT ─▶ Show, Attend and Tell
      ─▶ ConvLSTM ─▶ pointer network

Every model type a plugin registered (`builder_ui.builders.registry`) gets a preset
too: its default fields on the first built-in task whose inputs and targets
it reads, so that it shows in the app like the built-ins.

Nothing here imports Keras.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml
from pydantic import ValidationError

from builder_ui.builders import registry


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


# The packaged spec files (also `examples/specs/`, a link to this folder), by stem.
SPECS_DIR = resources.files(__name__) / "specs"


def _read(key: str) -> dict[str, Any]:
    """The spec document of `specs/<key>.yaml` (a file we ship, so plain safe YAML)."""
    return yaml.safe_load((SPECS_DIR / f"{key}.yaml").read_text(encoding="utf-8"))


# The stages of the arc, in order: the spec file's stem, the app's label, one line.
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
        "show_attend_tell",
        "10b · Show, Attend and Tell",
        "Xu et al. (2015): Bahdanau's attention over image regions writes a caption.",
    ),
    (
        "conv_lstm",
        "10c · ConvLSTM",
        "Shi et al. (2015): an LSTM whose states are images predicts the next frames.",
    ),
    (
        "pointer_network",
        "11 · Pointer network",
        "Vinyals, Fortunato & Jaitly (2015): attention over the inputs is the output (sorting).",
    ),
    (
        "graph_attention_classifier",
        "12 · Assembled graph",
        "A model of your own, block by block on the canvas: attention over a bidirectional "
        "1997 LSTM.",
    ),
)

_ARC: tuple[Preset, ...] = tuple(
    Preset(key, label, description, _read(key)) for key, label, description in _STAGES
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
