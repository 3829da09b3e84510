"""A model's memory, estimated from its spec before anything is allocated, and a budget for it.

    spec + task shapes ─▶ builder.estimate (one `Part` per layer)
                       ─▶ MemoryEstimate (weights, gradients, optimiser state, one batch)
                       ─▶ check_budget: refuse, naming the field, what exceeds the budget

A spec that passes validation may still ask for more memory than the machine
has: `model.encoder.units: 26000` on a GRU is 4 billion weights, 65 GB with
Adam. Building it to count its weights would allocate them, so a builder counts
them without allocating (`ModelBuilder.estimate`). A `graph`, and each short
form, each of which builds as one (`short_forms`), is counted from the model
itself: its layers built symbolically, in a stateless scope that gives every
weight a shape and no memory (`graph_model.estimate_nodes`), each layer's weights
its `count_params()` and its activations what `graph_model.kept_floats` reads off the
built layer.

The estimate, in bytes (`MemoryEstimate.total_bytes`):

    P · (4 + 4 + 4·s)  +  max(2 · B · A · a,  D · K · a)

- `P` parameters, held as float32 (4 bytes; Keras keeps float32 variables
  under a mixed-precision policy too), one float32 gradient each (4 bytes;
  counted dense, although TensorFlow's embedding gradients are sparse) and
  `s` float32 optimiser slots each: Adam and AdamW 2 (first and second
  moments), RMSprop 1 (the mean square; no momentum, as `make_optimizer`
  sets none), SGD 0 (no momentum).
- `A` activations per example: every layer output kept for the backward
  pass, summed over the layers (`Part.activations`: time × width for a
  sequence layer, with a recurrent layer's gates, and heads × T × T for
  attention scores), times `B` the batch size; `a` bytes each, 4 (float32)
  unless `train.mixed_precision` asks for a 16-bit policy (2) — `auto` counts
  4, since it is float32 on a CPU. The factor 2 is the backward pass, whose
  gradients of the activations are as large as the activations.
- `K` floats per example that decoding holds at once (`Part.decoding`): a
  run that scores translations decodes its validation sources after training
  (`Seq2SeqBuilder.evaluate`), and a Transformer's decoder keeps each block's
  self-attention keys and values for `max_length` positions, whatever the
  targets' length (`decoder_cache`); `D` sources are decoded at once
  (`decode_batch`: `train.batch_size`, at least `DECODE_BATCH`, at most the
  validation split). Training's activations are freed by then, so the larger
  of the two counts, beside the weights and the optimiser's state, which stay.

It leaves out the framework itself (already loaded when the check runs, so
already out of the free memory the budget is a fraction of), the data (the
task made it already) and compiled kernels' scratch space. It is meant to
be within a small factor of the process's growth, and above it rather than
below.

The budget (`memory_budget`): `KERAS_SEQ_MEMORY_BUDGET` when set (`4GB`,
`512MB`, `1.5GiB`, `75%` of the available memory, or `none` for no check;
`keras-seq train/sweep/ui --memory-budget` set it), else half of the memory
available on this machine now (`MemAvailable` in `/proc/meminfo`, else
`os.sysconf`). It is host memory: on a GPU the weights live in device
memory, which this does not measure.

A plugin builder that does not implement `estimate` gets no estimate
(`estimate` returns None) and is not refused: a wrong guess would refuse
models that fit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder_ui.specs import SpecError, shown

BUDGET_ENV = "KERAS_SEQ_MEMORY_BUDGET"
DEFAULT_FRACTION = 0.5
WEIGHT_BYTES = 4  # float32 variables, under every dtype policy
GRADIENT_BYTES = 4
SLOT_BYTES = 4
# Optimiser state per weight, as `builder_ui.builders.prepared.make_optimizer` makes them.
OPTIMIZER_SLOTS = {"adam": 2, "adamw": 2, "rmsprop": 1, "sgd": 0}
BACKWARD_FACTOR = 2  # the activations, and their gradients in the backward pass
DECODE_BATCH = 256  # the fewest validation sources a run decodes at once, to score them
MEMINFO = Path("/proc/meminfo")

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_NO_BUDGET = ("none", "off", "unlimited")


class BudgetError(SpecError):
    """A memory budget that cannot be read (`KERAS_SEQ_MEMORY_BUDGET=lots`)."""


@dataclass(frozen=True)
class Part:
    """One layer (or a group of layers) of an estimate.

    Attributes:
        name: The layer's name in the built model (`gru_0`, `encoder_block_1`, ...).
        field: The spec field that sets its size, from the spec's root
            (`model.encoder.units`): the one a refusal names.
        parameters: Its weights, exactly as Keras will create them.
        activations: Floats per example it keeps for the backward pass.
        decoding: Floats per example it holds at once while the trained model
            decodes (a Transformer decoder's key/value cache), 0 for none.
    """

    name: str
    field: str
    parameters: int
    activations: int = 0
    decoding: int = 0


@dataclass(frozen=True)
class MemoryEstimate:
    """What training a model needs, from its `Part`s and the spec's `train` section.

    Attributes:
        parts: One per layer (or group), as the builder's `estimate` gave them.
        batch_size: `train.batch_size`.
        optimizer: `train.optimizer`.
        activation_bytes: Bytes per activation (4, or 2 under a 16-bit policy).
        decode_batch: Examples decoded at once after training (`decode_batch`).
    """

    parts: tuple[Part, ...]
    batch_size: int
    optimizer: str
    activation_bytes: int = 4
    decode_batch: int = 0

    @property
    def parameters(self) -> int:
        return sum(part.parameters for part in self.parts)

    @property
    def optimizer_slots(self) -> int:
        return OPTIMIZER_SLOTS.get(self.optimizer, 2)

    @property
    def bytes_per_parameter(self) -> int:
        """The weight, its gradient and the optimiser's slots."""
        return WEIGHT_BYTES + GRADIENT_BYTES + SLOT_BYTES * self.optimizer_slots

    @property
    def parameter_bytes(self) -> int:
        return self.parameters * self.bytes_per_parameter

    @property
    def activation_memory(self) -> int:
        """One batch of activations through the forward and backward pass, in bytes."""
        floats = sum(part.activations for part in self.parts)
        return BACKWARD_FACTOR * self.batch_size * floats * self.activation_bytes

    @property
    def decode_memory(self) -> int:
        """What decoding `decode_batch` examples at once holds, in bytes (0 without a decoder)."""
        floats = sum(part.decoding for part in self.parts)
        return self.decode_batch * floats * self.activation_bytes

    @property
    def total_bytes(self) -> int:
        """The weights and their state, and the larger of training's and decoding's tensors."""
        return self.parameter_bytes + max(self.activation_memory, self.decode_memory)

    def part_bytes(self, part: Part) -> int:
        return (
            part.parameters * self.bytes_per_parameter
            + BACKWARD_FACTOR * self.batch_size * part.activations * self.activation_bytes
            + self.decode_batch * part.decoding * self.activation_bytes
        )

    def driving_field(self) -> str:
        """The spec field whose parts need the most bytes: the one to make smaller."""
        by_field: dict[str, int] = {}
        for part in self.parts:
            by_field[part.field] = by_field.get(part.field, 0) + self.part_bytes(part)
        return max(by_field, key=by_field.get) if by_field else "model"

    def describe(self) -> str:
        """`about 66.3 GB (4,057,664,082 parameters: 64.9 GB for ...; activations ...: 1.3 GB)`.

        A model that decodes after training ends with what decoding holds:
        `...; decoding 200 examples at once: 215 GB)`.
        """
        slots = self.optimizer_slots
        state = (
            f" and {self.optimizer}'s {slots} slot{'s' if slots != 1 else ''} each" if slots else ""
        )
        decoding = (
            f"; decoding {self.decode_batch} examples at once: {format_bytes(self.decode_memory)}"
            if self.decode_memory
            else ""
        )
        return (
            f"about {format_bytes(self.total_bytes)} ({self.parameters:,} parameters: "
            f"{format_bytes(self.parameter_bytes)} for the weights, their gradients{state}; "
            f"activations of one batch of {self.batch_size}: "
            f"{format_bytes(self.activation_memory)}{decoding})"
        )


@dataclass(frozen=True)
class Budget:
    """How many bytes a model may need, and where that number came from (for messages)."""

    bytes: int | None
    source: str

    def describe(self) -> str:
        if self.bytes is None:
            return f"no memory budget ({self.source})"
        return f"the memory budget of {format_bytes(self.bytes)} ({self.source})"


def format_bytes(count: float) -> str:
    """`8_100_000_000` → `8.1 GB` (decimal units, as `4GB` in the budget means)."""
    for unit, size in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= size:
            value = count / size
            return f"{value:.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{int(count)} bytes"


def parse_size(text: str, *, name: str = BUDGET_ENV) -> int:
    """`"4GB"` → 4·10⁹ bytes; `"512MiB"` → 512·2²⁰. Raises `BudgetError` naming `name`."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise BudgetError(
            f"expected a size such as 4GB, 512MB or 1.5GiB, a share of the available memory "
            f"such as 50%, or none, got {shown(text)}",
            path=name,
        )
    return int(float(match.group(1)) * _UNITS[unit])


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now; None when it cannot be read.

    `MemAvailable` of `/proc/meminfo` (Linux: free memory plus reclaimable
    caches), else the free pages of `os.sysconf`.
    """
    try:
        for line in MEMINFO.read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the value is in kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def memory_budget(environ: Mapping[str, str] | None = None) -> Budget:
    """The budget: `KERAS_SEQ_MEMORY_BUDGET` (size, `N%` or `none`), else half the free memory.

    Raises:
        BudgetError: the variable is set to something that is not a size.
    """
    environ = os.environ if environ is None else environ
    text = (environ.get(BUDGET_ENV) or "").strip()
    if text.lower() in _NO_BUDGET:
        return Budget(None, f"{BUDGET_ENV}={text}")
    percent = _PERCENT.match(text) if text else None
    if text and percent is None:
        return Budget(parse_size(text), f"{text}, set by {BUDGET_ENV} or --memory-budget")
    fraction = float(percent.group(1)) / 100 if percent else DEFAULT_FRACTION
    free = available_memory()
    if free is None:
        return Budget(None, "the free memory of this machine is unknown")
    share = "half" if fraction == DEFAULT_FRACTION else f"{fraction:.0%}"
    return Budget(int(free * fraction), f"{share} of the {format_bytes(free)} of free memory")


def decode_batch(batch_size: int, num_val: int | None = None) -> int:
    """The validation sources a run decodes at once: `batch_size`, at least `DECODE_BATCH`,
    at most `num_val` (the validation split, when known)."""
    batch = max(batch_size, DECODE_BATCH)
    return batch if num_val is None else max(1, min(batch, int(num_val)))


def estimate(spec: Any, builder: Any, task: Any) -> MemoryEstimate | None:
    """The memory of training `spec`'s model on `task`, or None if its builder cannot tell.

    Args:
        spec: The validated `ExperimentSpec`.
        builder: Its `ModelBuilder`.
        task: The task's `TaskData` (its `inputs` and `targets` shapes are read, and
            `num_val`, the most sources decoded at once, when it has one).
    """
    parts = builder.estimate(spec.model, task)
    if parts is None:
        return None
    train = spec.train
    half = train.mixed_precision in ("mixed_float16", "mixed_bfloat16")
    decoding = decode_batch(train.batch_size, getattr(task, "num_val", None))
    return MemoryEstimate(
        tuple(parts), train.batch_size, train.optimizer, 2 if half else 4, decoding
    )


def field_value(spec: Any, path: str) -> Any:
    """The value at a dotted path of the spec (`model.encoder.units` → 26000), or None."""
    node: Any = spec.to_dict()
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def check_budget(
    spec: Any, builder: Any, task: Any, budget: Budget | None = None
) -> MemoryEstimate | None:
    """Refuse a model whose estimate exceeds the budget; return the estimate (None if unknown).

    Raises:
        SpecError: at the field that drives the estimate, e.g. `model.encoder.units: 26000
            makes this model need about 65 GB (...), over the memory budget of 6.0 GB (...)`.
        BudgetError: an unreadable `KERAS_SEQ_MEMORY_BUDGET`.
    """
    budget = memory_budget() if budget is None else budget
    found = estimate(spec, builder, task)
    if found is None or budget.bytes is None or found.total_bytes <= budget.bytes:
        return found
    path = found.driving_field()
    value = field_value(spec, path)
    subject = f"{shown(value)} makes this model" if value is not None else "this model would"
    raise SpecError(
        f"{subject} need {found.describe()}, over {budget.describe()}; make {path} smaller, "
        f"or set {BUDGET_ENV} or --memory-budget to change the budget",
        path=path,
    )


# --- What decoding holds ------------------------------------------------------------------------


def decoder_cache(max_length: int, width: int, heads: int, source_length: int) -> int:
    """Floats per example one Transformer decoder block holds at a decoding step.

    Its self-attention keys and values over `max_length` positions (`width`
    each), twice while the step writes position t (`ops.where` makes new
    ones), the cross-attention keys and values of the source, and the step's
    scores and weights over the cache (`keras_seq.layers.TransformerDecoderBlock.
    decode_step`). The position table a step reads, `max_length × width` once
    rather than per example, is left out: it is smaller than one example's cache.
    """
    return 2 * 2 * max_length * width + 2 * source_length * width + 2 * heads * max_length
