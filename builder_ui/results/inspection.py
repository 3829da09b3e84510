"""Looking inside a trained run: predictions, attention, gradient flow and positions.

Every function takes a run's loaded model and its task data (the task is made
again from the run's spec, which is seeded, so it is the data the run saw):

- `predict`: the model's output for an input the user types, or for an
  example of the validation split: class probabilities, a regression value,
  a translation (with where each output word attended), a sorting order
  (with the pointer distributions), an image's class, or an image's caption
  (with where the captioner looked for each word, drawn over the image), or
  a video's next frames (predicted against true, with their MSE).
- `gradient_flow_figure`: ‖∂L/∂x_t‖ against the lag for each recurrent layer
  of the model, with its trained weights (`keras_seq.diagnostics`).
- `positional_figure`: the sinusoidal encoding the model adds, as a heatmap.
- `vit_similarity_figure`: how similar the ViT's learned position
  embeddings are, on the patch grid (Dosovitskiy et al. 2020, figure 7).

Typed inputs, by task:

- text (translation, labelled text): words, cut by the task's vocabulary;
- token ids (`long_lag` with `encoding: ids`): integers separated by spaces;
- numbers: one value per step separated by spaces, or for several features
  per step `a,b,c` per step; for one-hot inputs (`long_lag`), a symbol index
  per step (`0 3 5 …`) is one-hot encoded.

Shorter inputs are padded with zeros to the task's length; longer ones are
refused with the length allowed.

A translation is decoded as `Decoding` says: greedy (the default), beam search
with GNMT's length and coverage penalties, or sampling with a temperature,
top-k and top-p (`keras_seq.models.decoding`).
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
from matplotlib.figure import Figure

from builder_ui.builders.graph import decoder_block, translates
from builder_ui.builders.graph_blocks import CAPTION_DECODER, POINTER_DECODER
from keras_seq.diagnostics import (
    gradient_flow,
    plot_alignment,
    plot_gaze,
    plot_gradient_flow,
    plot_position_similarity,
    plot_positional_encoding,
)
from keras_seq.layers import (
    LearnedPositionalEmbedding,
    PatchEmbedding,
    SinusoidalPositionalEncoding,
)
from keras_seq.models import Beam, Greedy, Sample
from keras_seq.models.translator import Translator

MAX_TYPED_CHARS = 10_000
MAX_GRADIENT_STEPS = 200
MAX_SHOWN_CLASSES = 10


class InspectError(ValueError):
    """An input or a request the chosen run cannot answer; the message says why."""


DECODING_METHODS = ("greedy", "beam", "sample")
# One sentence at a time: a beam past this explores nothing more a person would read, and
# bounds the work (the beam holds width × vocabulary candidates per step).
MAX_INSPECT_BEAM = 64
MAX_SEED = 2**31 - 1  # keras_seq.models.decoding.MAX_SEED
# The translators `translator` keeps (model, task, translator), the most recently used last.
TRANSLATORS_KEPT = 4
_TRANSLATORS: list[tuple[Any, Any, Any]] = []
_TRANSLATORS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Decoding:
    """How Inspect decodes a translation (`keras_seq.models.Translator.translate`).

    Attributes:
        method: `greedy` (the most probable word at each step), `beam`
            (beam search, Wu et al. 2016) or `sample` (Holtzman et al. 2020).
        beam_width: Prefixes kept by beam search, 1 to `MAX_INSPECT_BEAM`.
        length_penalty: GNMT's α, `lp(Y) = ((5 + |Y|) / 6)^α` (beam only).
        coverage_penalty: GNMT's β, `β Σ_i log min(Σ_j p_ij, 1)` (beam only; a
            model without attention has no coverage to count).
        temperature: Sampling's `T > 0`; below 1 sharpens, above 1 flattens.
        top_k: Sample among the `k` most probable words; 0 for all of them.
        top_p: Sample from the nucleus of probability `p`; 1 for all words.
        seed: Sampling's seed, so a sample can be drawn again.
    """

    method: str = "greedy"
    beam_width: int = 4
    length_penalty: float = 0.6
    coverage_penalty: float = 0.0
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def checked(self) -> Decoding:
        """This decoding, or an `InspectError` naming the first field out of range."""
        if self.method not in DECODING_METHODS:
            _bad("method", f"one of {', '.join(DECODING_METHODS)}", self.method)
        _whole(self, "beam_width", 1, MAX_INSPECT_BEAM)
        _number(self, "length_penalty", 0.0, 10.0)
        _number(self, "coverage_penalty", 0.0, 10.0)
        _number(self, "temperature", 1e-3, 100.0)
        _whole(self, "top_k", 0, 2**20)
        _number(self, "top_p", 1e-6, 1.0)
        _whole(self, "seed", 0, MAX_SEED)
        return self

    def strategy(self) -> Any:
        """This method's fields as its `keras_seq.models` strategy: `Greedy()`, `Beam(...)` or
        `Sample(...)` (a top-k of 0 and a top-p of 1 are "every word": None there)."""
        if self.method == "beam":
            return Beam(
                width=int(self.beam_width),
                length_penalty=float(self.length_penalty),
                coverage_penalty=float(self.coverage_penalty),
            )
        if self.method == "sample":
            return Sample(
                temperature=float(self.temperature),
                top_k=int(self.top_k) or None,
                top_p=None if float(self.top_p) >= 1.0 else float(self.top_p),
                seed=int(self.seed),
            )
        return Greedy()

    def describe(self) -> str:
        """One line for people: how the translation shown was decoded."""
        if self.method == "beam":
            text = f"beam search, width {self.beam_width}, α = {self.length_penalty:g}"
            return text + (f", β = {self.coverage_penalty:g}" if self.coverage_penalty else "")
        if self.method == "sample":
            parts = [f"T = {self.temperature:g}"]
            if self.top_k:
                parts.append(f"top-k {self.top_k}")
            if self.top_p < 1:
                parts.append(f"top-p {self.top_p:g}")
            return f"sampled ({', '.join(parts)}, seed {self.seed})"
        return "greedy"


def _bad(name: str, expected: str, value: Any) -> None:
    raise InspectError(f"Decoding: {name}: expected {expected}, got {value!r}")


def _number(decoding: Decoding, name: str, low: float, high: float) -> None:
    value = getattr(decoding, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not low <= value <= high:
        _bad(name, f"a number from {low:g} to {high:g}", value)


def _whole(decoding: Decoding, name: str, low: int, high: int) -> None:
    value = getattr(decoding, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value != int(value) or not low <= value <= high:
        _bad(name, f"a whole number from {low} to {high}", value)


@dataclass
class Prediction:
    """What a model made of one input.

    Attributes:
        summary: Markdown: the input as the model read it, the output, the
            reference when the input came from the validation split.
        headers, rows: A table (class probabilities, pointer order, ...).
        figure: A matplotlib figure (attention or pointer heatmap, or the
            image), or None.
    """

    summary: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    figure: Any = None


def model_kind(spec: dict[str, Any]) -> str:
    """The kind of a run's model, from its spec: what Inspect shows for it.

    `seq2seq`, `captioner` (`show_attend_tell`), `frames` (a next-frame
    `conv_lstm`), `pointer`, `vit`, `classifier`, `regressor` or `other`.
    """
    model_type = spec.get("model", {}).get("type")
    if translates(spec):  # a seq2seq, or a graph with a RecurrentDecoder block
        return "seq2seq"
    decoder = decoder_block(spec)  # a graph's decoder: a captioner's or a pointer network's
    if decoder is not None:
        return {CAPTION_DECODER: "captioner", POINTER_DECODER: "pointer"}[decoder]
    return {
        "seq2seq": "seq2seq",
        "show_attend_tell": "captioner",
        "pointer_network": "pointer",
        "vision_transformer": "vit",
        "conv_lstm": "frames",
        "sequence_classifier": "classifier",
        "sequence_regressor": "regressor",
    }.get(model_type, "other")


def _example_index(task: Any, index: Any) -> int:
    count = len(task.x_val)
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise InspectError(f"Example number: expected an integer, got {index!r}.") from None
    if not 0 <= index < count:
        raise InspectError(
            f"Example number: expected 0 to {count - 1} (the validation split has {count} "
            f"examples), got {index}."
        )
    return index


def _typed(text: str) -> str:
    text = (text or "").strip()
    if len(text) > MAX_TYPED_CHARS:
        raise InspectError(f"Input: at most {MAX_TYPED_CHARS:,} characters, got {len(text):,}.")
    return text


# ---------------------------------------------------------------------------
# Sequence inputs


def parse_sequence(text: str, task: Any) -> np.ndarray:
    """One input sequence `(1, length, …)` for the task, from typed text (see module docstring)."""
    inputs = task.inputs
    length = int(inputs.length)
    if inputs.kind == "tokens":
        vocabulary = task.source_vocabulary
        if vocabulary is not None:
            ids = vocabulary.encode(text)
            if not ids:
                raise InspectError("Input: type at least one word.")
        else:
            ids = []
            for item in re.split(r"[\s,;]+", text):
                if not item:
                    continue
                try:
                    value = int(item)
                except ValueError:
                    raise InspectError(
                        f"Input: expected token ids (integers 0 to {inputs.vocab_size - 1}) "
                        f"separated by spaces, got {item!r}."
                    ) from None
                if not 0 <= value < inputs.vocab_size:
                    raise InspectError(
                        f"Input: token ids must be 0 to {inputs.vocab_size - 1}, got {value}."
                    )
                ids.append(value)
        if len(ids) > length:
            raise InspectError(f"Input: at most {length} tokens for this task, got {len(ids)}.")
        array = np.zeros((1, length), dtype=np.int32)
        array[0, : len(ids)] = ids
        return array
    features = int(inputs.features)
    steps = [step for step in re.split(r"[\s;]+", text) if step]
    if not steps:
        raise InspectError("Input: type the values of at least one step.")
    if len(steps) > length:
        raise InspectError(f"Input: at most {length} steps for this task, got {len(steps)}.")
    array = np.zeros((1, length, features), dtype=np.float32)
    for position, step in enumerate(steps):
        values = [v for v in step.split(",") if v]
        try:
            numbers = [float(v) for v in values]
        except ValueError:
            raise InspectError(
                f"Input, step {position + 1}: expected numbers, got {step!r}."
            ) from None
        if not all(math.isfinite(v) for v in numbers):
            raise InspectError(
                f"Input, step {position + 1}: expected finite numbers, got {step!r}."
            )
        if features > 1 and len(numbers) == 1 and numbers[0].is_integer():
            symbol = int(numbers[0])
            if not 0 <= symbol < features:
                raise InspectError(
                    f"Input, step {position + 1}: a symbol index must be 0 to {features - 1}, "
                    f"got {symbol}."
                )
            array[0, position, symbol] = 1.0
        elif len(numbers) == features:
            array[0, position] = numbers
        else:
            raise InspectError(
                f"Input, step {position + 1}: expected {features} comma-separated values "
                f"(or one symbol index 0 to {features - 1}), got {len(numbers)}."
            )
    return array


def describe_sequence(array: np.ndarray, task: Any) -> str:
    """The input as the model reads it, in words."""
    inputs = task.inputs
    row = array[0]
    if inputs.kind == "tokens":
        if task.source_vocabulary is not None:
            return task.source_vocabulary.decode(row.tolist()) or "(empty)"
        return " ".join(str(int(v)) for v in row)
    if row.ndim == 2 and row.shape[1] > 1 and np.all((row == 0) | (row == 1)):
        symbols = ["·" if not step.any() else str(int(step.argmax())) for step in row]
        return "symbols " + " ".join(symbols)
    if row.ndim == 2 and row.shape[1] == 1:
        return " ".join(f"{v:.3g}" for v in row[:, 0])
    return " ".join("(" + ",".join(f"{v:.3g}" for v in step) + ")" for step in row)


def _class_names(task: Any) -> list[str]:
    classes = (task.params or {}).get("classes")
    count = int(task.targets.num_classes or 0)
    if classes and len(classes) == count:
        return [str(c) for c in classes]
    return [str(i) for i in range(count)]


def _classify(
    model: Any, x: np.ndarray, task: Any, reference: Any, *, show_input: bool = True
) -> Prediction:
    probabilities = np.asarray(model.predict(x, verbose=0))[0]
    names = _class_names(task)
    order = np.argsort(-probabilities)[:MAX_SHOWN_CLASSES]
    rows = [[names[i], round(float(probabilities[i]), 4)] for i in order]
    lines = [f"**Input:** `{describe_sequence(x, task)}`"] if show_input else []
    lines.append(
        f"**Predicted class:** `{names[int(order[0])]}` (p = {probabilities[order[0]]:.3f})"
    )
    if reference is not None:
        lines.append(f"**True class:** `{names[int(reference)]}`")
    return Prediction("\n\n".join(lines), ["class", "probability"], rows)


def _regress(model: Any, x: np.ndarray, task: Any, reference: Any) -> Prediction:
    values = np.asarray(model.predict(x, verbose=0))[0].reshape(-1)
    lines = [
        f"**Input:** `{describe_sequence(x, task)}`",
        "**Predicted:** " + ", ".join(f"{v:.4g}" for v in values),
    ]
    if reference is not None:
        lines.append("**True value:** " + ", ".join(f"{v:.4g}" for v in np.ravel(reference)))
    rows = [[f"output {i}", round(float(v), 6)] for i, v in enumerate(values)]
    return Prediction("\n\n".join(lines), ["output", "value"], rows)


# ---------------------------------------------------------------------------
# Per model kind


def translation_length(model: Any, task: Any) -> int:
    """The most tokens a translation of `task` takes, END included: `targets.length`.

    A target is the sentence, one END and padding in `targets.length` ids; the decoder
    is fed START and never emits it, so `targets.length` steps hold the longest target
    and its END, and one more would only add a token no target has. A model with a
    `max_decode_length` (a Transformer's positions) caps it. Inspect, BLEU by length
    and the exported translator all decode this many steps, as training's evaluation does.
    """
    length = int(task.targets.length)
    limit = getattr(model, "max_decode_length", None)
    return length if limit is None else min(length, int(limit))


def translator(model: Any, task: Any) -> Any:
    """A `keras_seq.models.Translator` for a trained seq2seq model and its task's vocabularies.

    The same model and task give the same translator, whose compiled decoders are kept: a
    second click on Inspect decodes without tracing the decoding loop again (a tiny GRU's
    translation took 0.6 s of which 0.45 s was the trace). The last `TRANSLATORS_KEPT` are
    kept, so what they hold alive is bounded.
    """
    with _TRANSLATORS_LOCK:
        for index, (kept_model, kept_task, kept) in enumerate(_TRANSLATORS):
            if kept_model is model and kept_task is task:
                _TRANSLATORS.append(_TRANSLATORS.pop(index))  # the most recently used last
                return kept
    length = translation_length(model, task)
    made = Translator(model, task.source_vocabulary, task.target_vocabulary, max_length=length)
    with _TRANSLATORS_LOCK:
        _TRANSLATORS.append((model, task, made))
        del _TRANSLATORS[:-TRANSLATORS_KEPT]
    return made


def _translate(model: Any, task: Any, text: str, index: Any, decoding: Decoding) -> Prediction:
    decoding = decoding.checked()
    if decoding.method == "beam" and decoding.coverage_penalty and not _attends(model):
        _bad("coverage_penalty", "0 for a model without attention (no coverage to count)", 0.0)
    reference = None
    if not text:
        i = _example_index(task, index)
        text = task.source_vocabulary.decode(task.x_val[i].tolist())
        reference = task.target_vocabulary.decode(task.y_val[i].tolist())
    try:
        output, alignment = translator(model, task).translate(
            text, decoding.strategy(), return_attention=True
        )
    except ValueError as error:
        raise InspectError(f"Input: {error}") from None
    lines = [
        f"**Source:** {text}",
        f"**Translation:** {output}",
        f"**Decoding:** {decoding.describe()}",
    ]
    if reference is not None:
        lines.append(f"**Reference:** {reference}")
    figure = None
    if alignment.weights.size and float(np.abs(alignment.weights).sum()) > 0:
        figure = alignment.plot(title="Attention: output × source words")
    else:
        lines.append("_This model has no attention: nothing to draw._")
    rows = [
        [token, alignment.source_tokens[int(np.argmax(w))] if np.any(w) else ""]
        for token, w in alignment.pairs()
    ]
    return Prediction(
        "\n\n".join(lines), ["output word", "most attended source word"], rows, figure
    )


def _point(model: Any, task: Any, text: str, index: Any) -> Prediction:
    reference = None
    if text:
        features = int(task.inputs.features)
        steps = [s for s in re.split(r"[\s;]+", text) if s]
        if len(steps) < 2:
            raise InspectError("Input: type at least two numbers to sort.")
        try:
            values = [[float(v) for v in s.split(",")] for s in steps]
        except ValueError:
            raise InspectError("Input: expected numbers separated by spaces.") from None
        if any(len(v) != features for v in values) or not np.all(np.isfinite(values)):
            raise InspectError(f"Input: expected {features} finite value(s) per step.")
        x = np.asarray(values, dtype=np.float32)[None]  # (1, n, features)
    else:
        i = _example_index(task, index)
        x = task.x_val[i : i + 1]
        reference = task.y_val[i]
    pointers, probabilities = model.decode(x, return_probabilities=True)
    order = pointers[0].tolist()
    labels = [",".join(f"{value:.3g}" for value in step) for step in np.asarray(x[0]).tolist()]
    lines = [
        f"**Input:** {' '.join(labels)}",
        f"**Pointers:** {' '.join(map(str, order))} → {' '.join(labels[j] for j in order)}",
    ]
    if reference is not None:
        lines.append(f"**Target pointers:** {' '.join(str(int(j)) for j in reference)}")
    figure = plot_alignment(
        probabilities[0],
        labels,
        [f"step {s + 1}" for s in range(len(order))],
        title="Pointer distributions: output step × input position",
    )
    rows = [[s + 1, j, labels[j]] for s, j in enumerate(order)]
    return Prediction("\n\n".join(lines), ["step", "position", "value"], rows, figure)


def _image(model: Any, task: Any, text: str, index: Any) -> Prediction:
    if text:
        raise InspectError(
            "Input: a ViT reads images; leave the text empty and choose an example number."
        )
    i = _example_index(task, index)
    x = task.x_val[i : i + 1]
    prediction = _classify(model, x, task, task.y_val[i], show_input=False)
    figure = Figure(figsize=(3, 3), layout="constrained")
    axes = figure.add_subplot()
    image = x[0]
    axes.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray")
    axes.set_title(f"validation example {i}")
    axes.set_axis_off()
    prediction.figure = figure
    return prediction


def _caption(model: Any, task: Any, text: str, index: Any, decoding: Decoding) -> Prediction:
    """A validation image's caption, decoded as `decoding` says, and the gaze of each word."""
    if text:
        raise InspectError(
            "Input: a captioner reads images; leave the text empty and choose an example number."
        )
    decoding = decoding.checked()
    i = _example_index(task, index)
    image = task.x_val[i : i + 1]
    length = translation_length(model, task)
    result = decoding.strategy().decode(model, image, length, return_attention=True)
    ids = keras.ops.convert_to_numpy(result.ids)[0]
    weights = keras.ops.convert_to_numpy(result.attention)[0]  # (length, regions)
    vocabulary = task.target_vocabulary
    emitted = int(keras.ops.convert_to_numpy(result.lengths)[0])
    words = [vocabulary.id_to_token(int(token)) for token in ids[:emitted]]
    caption = vocabulary.decode(ids)
    reference = vocabulary.decode(task.y_val[i].tolist())
    boxes = (getattr(task, "annotations", None) or {}).get("boxes_val")
    lines = [
        f"**Caption:** {caption}",
        f"**Reference:** {reference}" + (" ✓" if caption == reference else ""),
        f"**Decoding:** {decoding.describe()}",
    ]
    rows_of_grid, columns = model.region_grid
    rows = []
    for word, alpha in zip(words, weights[:emitted], strict=True):
        row, column = divmod(int(np.argmax(alpha)), columns)
        rows.append([word, f"row {row}, column {column}", round(float(alpha.max()), 3)])
    figure = plot_gaze(
        image[0],
        weights[:emitted],
        words,
        (rows_of_grid, columns),
        boxes=None if boxes is None else boxes[i],
        title=f"Gaze for each word, validation example {i}",
    )
    return Prediction(
        "\n\n".join(lines), ["word", "most attended region", "its weight"], rows, figure
    )


def _attends(model: Any) -> bool:
    """False for a model that declares no attention (an RNN seq2seq without it)."""
    return not (hasattr(model, "attention") and model.attention is None)


def predict(
    model: Any,
    task: Any,
    spec: dict[str, Any],
    text: str,
    index: Any = 0,
    decoding: Decoding | None = None,
) -> Prediction:
    """The model's output for typed `text`, or for validation example `index` if it is empty.

    `decoding` says how a translation is decoded (greedy by default); other
    models ignore it.

    Raises:
        InspectError: an input the task cannot read, an example number out of
            range, or a decoding field out of range (named).
    """
    text = _typed(text)
    kind = model_kind(spec)
    if kind == "seq2seq":
        return _translate(model, task, text, index, decoding or Decoding())
    if kind == "captioner":
        return _caption(model, task, text, index, decoding or Decoding())
    if kind == "pointer":
        return _point(model, task, text, index)
    if kind == "vit":
        return _image(model, task, text, index)
    if kind == "frames":
        return _frames(model, task, text, index)
    if text:
        x = parse_sequence(text, task)
        reference = None
    else:
        i = _example_index(task, index)
        x, reference = task.x_val[i : i + 1], task.y_val[i]
    if task.targets.kind == "classification":
        return _classify(model, x, task, reference)
    if task.targets.kind == "regression":
        return _regress(model, x, task, reference)
    raise InspectError(f"Predictions for model type {spec['model']['type']!r} are not shown here.")


def _frames(model: Any, task: Any, text: str, index: Any) -> Prediction:
    """A validation video's predicted next frames against the true ones, with their MSE.

    The figure has two rows: the true frames, and the predicted ones, each
    after the last input frame (the one both continue). The summary gives the
    mean squared error of the prediction and, as a baseline, of the last
    input frame repeated; the table the same per future frame.
    """
    if text:
        raise InspectError(
            "Input: a next-frame model reads videos; leave the text empty and choose an "
            "example number."
        )
    i = _example_index(task, index)
    x, true = task.x_val[i : i + 1], task.y_val[i]  # (1, T_in, H, W, C), (T_out, H, W, C)
    predicted = np.asarray(model.predict(x, verbose=0))[0]
    last = x[0, -1]
    error = ((predicted - true) ** 2).mean(axis=(1, 2, 3))  # per future frame
    repeated = ((last[None] - true) ** 2).mean(axis=(1, 2, 3))
    count = len(true)
    lines = [
        f"**Validation example {i}:** {x.shape[1]} input frames, {count} predicted.",
        f"**MSE, predicted against true frames:** {error.mean():.4f}",
        f"**MSE of the last input frame repeated (baseline):** {repeated.mean():.4f}",
    ]
    rows = [
        [f"t + {t + 1}", round(float(error[t]), 5), round(float(repeated[t]), 5)]
        for t in range(count)
    ]

    figure = Figure(figsize=(1.3 * (count + 1), 3.0), layout="constrained")
    axes = figure.subplots(2, count + 1, squeeze=False)
    for row, (label, frames) in enumerate((("true", true), ("predicted", predicted))):
        for column, frame in enumerate([last, *frames]):
            axis = axes[row, column]
            image = frame[..., 0] if frame.shape[-1] == 1 else frame
            axis.imshow(image, cmap="gray", vmin=0, vmax=1)
            axis.set_xticks([])
            axis.set_yticks([])
            if row == 0:
                axis.set_title("last input" if column == 0 else f"t + {column}", fontsize=8)
        axes[row, 0].set_ylabel(label)
    figure.suptitle(f"Validation example {i}: MSE {error.mean():.4f}", fontsize=9)
    return Prediction(
        "\n\n".join(lines), ["future frame", "MSE", "MSE, last frame repeated"], rows, figure
    )


# ---------------------------------------------------------------------------
# Diagnostics


def _all_layers(model: Any) -> list[Any]:
    seen, found = set(), []
    stack = list(reversed(model.layers))
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        found.append(layer)
        stack.extend(reversed(getattr(layer, "layers", []) or []))
        for attr in ("forward_layer", "backward_layer"):
            inner = getattr(layer, attr, None)
            if inner is not None:
                stack.append(inner)
    return found


def recurrent_layers(model: Any) -> list[Any]:
    """The model's recurrent layers (`keras.layers.RNN` and subclasses, inside wrappers too)."""
    return [
        layer
        for layer in _all_layers(model)
        if isinstance(layer, keras.layers.RNN) and getattr(layer.cell, "built", False)
    ]


def gradient_flow_figure(model: Any, sequence_length: int, *, title: str | None = None) -> Any:
    """‖∂L/∂x_t‖ against the lag for each trained recurrent layer, on one log-scale figure."""
    layers = recurrent_layers(model)
    if not layers:
        raise InspectError(
            "This model has no recurrent layer (keras.layers.RNN): gradient flow is measured "
            "through an RNN's steps."
        )
    length = int(sequence_length)
    if not 2 <= length <= MAX_GRADIENT_STEPS:
        raise InspectError(f"Steps: expected 2 to {MAX_GRADIENT_STEPS}, got {length}.")
    frames = {layer.name: gradient_flow(layer, length) for layer in layers}
    return plot_gradient_flow(frames, title=title or "Gradient flow through time (trained weights)")


def positional_figure(model: Any | None, task: Any | None, *, d_model: int = 64, length: int = 50):
    """The sinusoidal positional encoding of the model (or of `d_model` × `length`)."""
    title = f"Sinusoidal positional encoding, d = {d_model}, {length} positions"
    if model is not None:
        layers = [
            layer for layer in _all_layers(model) if isinstance(layer, SinusoidalPositionalEncoding)
        ]
        if layers:
            layer = layers[0]
            width = _last_dim(layer)
            if width:
                d_model = width
            if task is not None and getattr(task.inputs, "length", None):
                length = int(task.inputs.length)
            title = f"What `{layer.name}` adds: d = {d_model}, {length} positions"
    return plot_positional_encoding(int(d_model), int(length), title=title)


def _last_dim(layer: Any) -> int | None:
    config = layer.get_build_config() or {}
    shape = config.get("input_shape")
    if shape and shape[-1]:
        return int(shape[-1])
    return None


def vit_similarity_figure(model: Any) -> Any:
    """Cosine similarity of the ViT's learned patch position embeddings, on the patch grid."""
    layers = _all_layers(model)
    if not any(isinstance(layer, PatchEmbedding) for layer in layers) or not any(
        isinstance(layer, LearnedPositionalEmbedding) for layer in layers
    ):
        raise InspectError(
            "This model is not a Vision Transformer with learned position embeddings; choose a "
            "vision_transformer run."
        )
    try:
        return plot_position_similarity(model)
    except ValueError as error:
        raise InspectError(str(error)) from None
