"""What a task hands to a model: its data splits and a description of them.

A task generator returns a `TaskData`: NumPy train and validation splits plus
a `SequenceSpec` (what one input sequence is) and a `TargetSpec` (what the
model must predict), so that a model builder can pick the input layer and the
head from the description alone, and a person can read what the task tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from keras_seq import validation

INPUT_KINDS = ("numeric", "tokens")
TARGET_KINDS = ("classification", "regression")


def _must_be_none(name: str, value: object, kind: str) -> None:
    if value is not None:
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected None for "
            f"kind={kind!r}, got {value!r}."
        )


@dataclass(frozen=True)
class SequenceSpec:
    """One input sequence: real-valued vectors or integer token ids.

    Args:
        kind: `"numeric"`: `(length, features)` float32 vectors, or
            `"tokens"`: `(length,)` int32 ids in `[0, vocab_size)`.
        length: Number of time steps.
        features: Size of each vector (numeric only).
        vocab_size: Number of distinct ids (tokens only).
    """

    kind: str
    length: int
    features: int | None = None
    vocab_size: int | None = None

    def __post_init__(self):
        validation.one_of("kind", self.kind, INPUT_KINDS)
        validation.positive_int("length", self.length)
        if self.kind == "numeric":
            validation.positive_int("features", self.features)
            _must_be_none("vocab_size", self.vocab_size, self.kind)
        else:
            validation.positive_int("vocab_size", self.vocab_size)
            _must_be_none("features", self.features, self.kind)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one sequence, without the batch axis."""
        if self.kind == "numeric":
            return (self.length, self.features)
        return (self.length,)

    @property
    def dtype(self) -> str:
        return "float32" if self.kind == "numeric" else "int32"

    def to_dict(self) -> dict[str, Any]:
        spec = {"kind": self.kind, "length": self.length, "dtype": self.dtype}
        if self.kind == "numeric":
            spec["features"] = self.features
        else:
            spec["vocab_size"] = self.vocab_size
        return spec


@dataclass(frozen=True)
class TargetSpec:
    """What the model predicts for one sequence: a class or a real vector.

    Args:
        kind: `"classification"`: one int32 label in `[0, num_classes)`, or
            `"regression"`: a float32 vector of size `output_dim`.
        num_classes: Number of classes (classification only, at least 2).
        output_dim: Size of the target vector (regression only).
    """

    kind: str
    num_classes: int | None = None
    output_dim: int | None = None

    def __post_init__(self):
        validation.one_of("kind", self.kind, TARGET_KINDS)
        if self.kind == "classification":
            validation.positive_int("num_classes", self.num_classes)
            if self.num_classes < 2:
                raise ValueError(
                    "Received an invalid value for argument `num_classes`, expected an "
                    f"integer of at least 2, got {self.num_classes!r}."
                )
            _must_be_none("output_dim", self.output_dim, self.kind)
        else:
            validation.positive_int("output_dim", self.output_dim)
            _must_be_none("num_classes", self.num_classes, self.kind)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one target, without the batch axis."""
        return () if self.kind == "classification" else (self.output_dim,)

    @property
    def dtype(self) -> str:
        return "int32" if self.kind == "classification" else "float32"

    def to_dict(self) -> dict[str, Any]:
        spec = {"kind": self.kind, "dtype": self.dtype}
        if self.kind == "classification":
            spec["num_classes"] = self.num_classes
        else:
            spec["output_dim"] = self.output_dim
        return spec


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class TaskData:
    """A task's train and validation splits and what they contain.

    All arguments are keyword-only. The arrays are checked against the specs
    (dtype and shape) when the object is made.

    Args:
        x_train, y_train, x_val, y_val: The splits. Inputs have shape
            `(n,) + inputs.shape` and dtype `inputs.dtype`; targets
            `(n,) + targets.shape` and dtype `targets.dtype`.
        name: The generator's name, e.g. `"long_lag"`.
        inputs: A `SequenceSpec`.
        targets: A `TargetSpec`.
        description: What the task is and what it tests, for people.
        params: The arguments that produced the data (seed included), so the
            same data can be generated again.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    name: str
    inputs: SequenceSpec
    targets: TargetSpec
    description: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.inputs, SequenceSpec):
            raise ValueError(
                "Received an invalid value for argument `inputs`, expected a SequenceSpec, "
                f"got {self.inputs!r}."
            )
        if not isinstance(self.targets, TargetSpec):
            raise ValueError(
                "Received an invalid value for argument `targets`, expected a TargetSpec, "
                f"got {self.targets!r}."
            )
        for split in ("train", "val"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            self._check_array(f"x_{split}", x, self.inputs.shape, self.inputs.dtype)
            self._check_array(f"y_{split}", y, self.targets.shape, self.targets.dtype)
            if len(x) != len(y):
                raise ValueError(
                    f"`x_{split}` holds {len(x)} sequences but `y_{split}` {len(y)} targets."
                )

    @staticmethod
    def _check_array(name, array, shape, dtype):
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape[1:] != shape:
            got = (
                f"an array of dtype {array.dtype} and shape {array.shape}"
                if isinstance(array, np.ndarray)
                else repr(type(array))
            )
            raise ValueError(
                f"`{name}` must be a {dtype} NumPy array of shape (n, {', '.join(map(str, shape))})"
                f", got {got}."
            )

    @property
    def num_train(self) -> int:
        return len(self.x_train)

    @property
    def num_val(self) -> int:
        return len(self.x_val)

    def to_dict(self) -> dict[str, Any]:
        """The description without the arrays, JSON-serialisable, for a model builder."""
        return {
            "name": self.name,
            "params": dict(self.params),
            "description": self.description,
            "inputs": self.inputs.to_dict(),
            "targets": self.targets.to_dict(),
            "num_train": self.num_train,
            "num_val": self.num_val,
        }

    def summary(self) -> str:
        """A few lines for people: the task, its splits, inputs and targets."""
        params = ", ".join(f"{key}={value!r}" for key, value in self.params.items())
        inputs = self.inputs.to_dict()
        targets = self.targets.to_dict()
        return "\n".join(
            [
                f"{self.name}({params})",
                self.description,
                f"train: {self.num_train} sequences, validation: {self.num_val}",
                "inputs: " + ", ".join(f"{k}={v}" for k, v in inputs.items()),
                "targets: " + ", ".join(f"{k}={v}" for k, v in targets.items()),
            ]
        )

    def __repr__(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self.params.items())
        return (
            f"TaskData({self.name}({params}), train={self.x_train.shape}, val={self.x_val.shape})"
        )
