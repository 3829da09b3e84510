"""What a task hands to a model: its data splits and a description of them.

A task generator returns a `TaskData`: NumPy train and validation splits plus
a `SequenceSpec` (what one input sequence is), or an `ImageSpec` (what one
input image is), or a `FramesSpec` (what one input video is), and a
`TargetSpec` (what the model must predict), so that a model builder can pick
the input layer and the head from the description alone, and a person can
read what the task tests.

Sequence-to-sequence tasks (targets of kind `"sequence"`) also carry the
`Vocabulary` of each side, so that ids can be turned back into text and the
vocabularies saved with a trained model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from keras_seq import argument_checks
from keras_seq.tasks.vocabulary import Vocabulary

INPUT_KINDS = ("numeric", "tokens")
TARGET_KINDS = ("classification", "regression", "pointer", "sequence", "frames")


# The TargetSpec fields each kind uses; the others must be None.
_TARGET_FIELDS = {
    "classification": ("num_classes",),
    "regression": ("output_dim",),
    "pointer": ("num_positions", "length"),
    "sequence": ("vocab_size", "length"),
    "frames": ("length", "height", "width", "channels"),
}


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
        argument_checks.one_of("kind", self.kind, INPUT_KINDS)
        argument_checks.positive_int("length", self.length)
        if self.kind == "numeric":
            argument_checks.positive_int("features", self.features)
            _must_be_none("vocab_size", self.vocab_size, self.kind)
        else:
            argument_checks.positive_int("vocab_size", self.vocab_size)
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
class ImageSpec:
    """One input image: a float32 array of `height × width × channels` pixels.

    A Vision Transformer reads an image as a sequence: it cuts it into
    patches, one token each (Dosovitskiy et al. 2020).

    Args:
        height: Rows of pixels.
        width: Columns of pixels.
        channels: Values per pixel (1 for grey, 3 for RGB). Default 1.
    """

    kind: ClassVar[str] = "image"

    height: int
    width: int
    channels: int = 1

    def __post_init__(self):
        argument_checks.positive_int("height", self.height)
        argument_checks.positive_int("width", self.width)
        argument_checks.positive_int("channels", self.channels)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one image, without the batch axis: `(height, width, channels)`."""
        return (self.height, self.width, self.channels)

    @property
    def dtype(self) -> str:
        return "float32"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "height": self.height,
            "width": self.width,
            "channels": self.channels,
            "dtype": self.dtype,
        }


@dataclass(frozen=True)
class FramesSpec:
    """One input video: `length` float32 frames of `height × width × channels` pixels.

    A ConvLSTM (Shi et al. 2015) reads it one frame per time step, each frame
    kept as an image; a frame-flattening LSTM reads each frame as one vector.

    Args:
        length: Number of frames (time steps).
        height: Rows of pixels per frame.
        width: Columns of pixels per frame.
        channels: Values per pixel (1 for grey). Default 1.
    """

    kind: ClassVar[str] = "frames"

    length: int
    height: int
    width: int
    channels: int = 1

    def __post_init__(self):
        argument_checks.positive_int("length", self.length)
        argument_checks.positive_int("height", self.height)
        argument_checks.positive_int("width", self.width)
        argument_checks.positive_int("channels", self.channels)

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        """The shape of one frame: `(height, width, channels)`."""
        return (self.height, self.width, self.channels)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one video, without the batch axis: `(length, height, width, channels)`."""
        return (self.length, *self.frame_shape)

    @property
    def dtype(self) -> str:
        return "float32"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "length": self.length,
            "height": self.height,
            "width": self.width,
            "channels": self.channels,
            "dtype": self.dtype,
        }


@dataclass(frozen=True)
class TargetSpec:
    """What the model predicts for one sequence: a class, a real vector, pointers or tokens.

    Args:
        kind: `"classification"`: one int32 label in `[0, num_classes)`;
            `"regression"`: a float32 vector of size `output_dim`; or
            `"pointer"`: `length` int32 positions of the input sequence, each
            in `[0, num_positions)`, one per output step (the outputs of a
            pointer network, Vinyals et al. 2015); or
            `"sequence"`: `length` int32 token ids in `[0, vocab_size)`, the
            target sentence followed by one END id and right-padded with PAD
            (the output of a sequence-to-sequence model, Sutskever et al.
            2014); or
            `"frames"`: `length` float32 frames of `height × width ×
            channels` pixels, the frames that follow the input frames (next
            frame prediction, Shi et al. 2015).
        num_classes: Number of classes (classification only, at least 2).
        output_dim: Size of the target vector (regression only).
        num_positions: Number of input positions a pointer can name, the
            input length (pointer only).
        length: Number of pointers per sequence, the output length (pointer),
            or of target ids, END and padding included (sequence), or of
            future frames (frames).
        vocab_size: Number of distinct target ids, the size of the target
            vocabulary, special tokens included (sequence only).
        height, width, channels: The shape of one target frame (frames only).
    """

    kind: str
    num_classes: int | None = None
    output_dim: int | None = None
    num_positions: int | None = None
    length: int | None = None
    vocab_size: int | None = None
    height: int | None = None
    width: int | None = None
    channels: int | None = None

    def __post_init__(self):
        argument_checks.one_of("kind", self.kind, TARGET_KINDS)
        if self.kind == "classification":
            argument_checks.positive_int("num_classes", self.num_classes)
            if self.num_classes < 2:
                raise ValueError(
                    "Received an invalid value for argument `num_classes`, expected an "
                    f"integer of at least 2, got {self.num_classes!r}."
                )
        elif self.kind == "regression":
            argument_checks.positive_int("output_dim", self.output_dim)
        elif self.kind == "pointer":
            argument_checks.positive_int("num_positions", self.num_positions)
            argument_checks.positive_int("length", self.length)
        elif self.kind == "frames":
            for name in _TARGET_FIELDS["frames"]:
                argument_checks.positive_int(name, getattr(self, name))
        else:
            argument_checks.positive_int("vocab_size", self.vocab_size)
            argument_checks.positive_int("length", self.length)
        for name in (
            "num_classes",
            "output_dim",
            "num_positions",
            "length",
            "vocab_size",
            "height",
            "width",
            "channels",
        ):
            if name not in _TARGET_FIELDS[self.kind]:
                _must_be_none(name, getattr(self, name), self.kind)

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one target, without the batch axis."""
        if self.kind == "classification":
            return ()
        if self.kind == "regression":
            return (self.output_dim,)
        if self.kind == "frames":
            return (self.length, self.height, self.width, self.channels)
        return (self.length,)

    @property
    def dtype(self) -> str:
        return "float32" if self.kind in ("regression", "frames") else "int32"

    def to_dict(self) -> dict[str, Any]:
        spec = {"kind": self.kind, "dtype": self.dtype}
        for name in _TARGET_FIELDS[self.kind]:
            spec[name] = getattr(self, name)
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
        inputs: A `SequenceSpec`, or an `ImageSpec` for image tasks, or a
            `FramesSpec` for videos.
        targets: A `TargetSpec`.
        description: What the task is and what it tests, for people.
        params: The arguments that produced the data (seed included), so the
            same data can be generated again.
        source_vocabulary: The `Vocabulary` of the input token ids, or None.
            Required when `targets.kind == "sequence"`; allowed for any
            `"tokens"` input. Its size must equal `inputs.vocab_size`.
        target_vocabulary: The `Vocabulary` of the target token ids, or None.
            Required for, and only allowed with, `targets.kind == "sequence"`;
            its size must equal `targets.vocab_size`.
        annotations: Extra arrays about the examples that a model does not
            train on but a check reads (a captioning task's object boxes,
            `"boxes_val"`), by name. Default empty.

    For `targets.kind == "sequence"` (a sequence-to-sequence task) the inputs
    must be `"tokens"`, or an image (a captioning task, Xu et al. 2015, which
    has no source vocabulary); every id of both sides must lie in its
    vocabulary, and every target row must hold the END id (each target is its
    sentence, then END, then PAD).
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
    source_vocabulary: Vocabulary | None = None
    target_vocabulary: Vocabulary | None = None
    annotations: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.inputs, (SequenceSpec, ImageSpec, FramesSpec)):
            raise ValueError(
                "Received an invalid value for argument `inputs`, expected a SequenceSpec, "
                f"an ImageSpec or a FramesSpec, got {self.inputs!r}."
            )
        if not isinstance(self.targets, TargetSpec):
            raise ValueError(
                "Received an invalid value for argument `targets`, expected a TargetSpec, "
                f"got {self.targets!r}."
            )
        if isinstance(self.inputs, ImageSpec) and self.targets.kind == "pointer":
            raise ValueError(
                "Received an invalid value for argument `targets`, expected a TargetSpec "
                f"whose pointers an image can hold, got {self.targets!r}: pointer targets "
                "name positions of an input sequence, not of an image."
            )
        self._check_frames()
        for split in ("train", "val"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            self._check_array(f"x_{split}", x, self.inputs.shape, self.inputs.dtype)
            self._check_array(f"y_{split}", y, self.targets.shape, self.targets.dtype)
            if len(x) != len(y):
                raise ValueError(
                    f"`x_{split}` holds {len(x)} sequences but `y_{split}` {len(y)} targets."
                )
            if self.targets.kind == "pointer":
                self._check_pointers(f"y_{split}", y, self.targets.num_positions)
        if self.targets.kind == "pointer" and self.targets.num_positions != self.inputs.length:
            raise ValueError(
                f"Pointer targets name positions of the input sequence, so `targets` needs "
                f"num_positions={self.inputs.length} (the input length), got "
                f"num_positions={self.targets.num_positions!r}."
            )
        self._check_vocabularies()

    @property
    def _captions(self):
        """Whether the task writes a sequence about an image (it has no source vocabulary)."""
        return self.targets.kind == "sequence" and self.inputs.kind == "image"

    def _check_frames(self):
        """Frame targets follow input frames of the same shape; frames hold no pointers."""
        frames_in = isinstance(self.inputs, FramesSpec)
        if self.targets.kind == "frames" and not (
            frames_in and self.inputs.frame_shape == self.targets.shape[1:]
        ):
            raise ValueError(
                "Received an invalid value for argument `inputs`, expected a FramesSpec whose "
                f"frames have the target frames' shape {self.targets.shape[1:]} for a task "
                f"whose targets are of kind 'frames', got {self.inputs!r}."
            )
        if frames_in and self.targets.kind in ("pointer", "sequence"):
            raise ValueError(
                "Received an invalid value for argument `targets`, expected a TargetSpec a "
                f"video can be read into, got {self.targets!r}: {self.targets.kind} targets "
                "name positions or tokens of an input sequence, not frames."
            )

    def _check_vocabularies(self):
        sequence = self.targets.kind == "sequence"
        for side, vocabulary in (
            ("source", self.source_vocabulary),
            ("target", self.target_vocabulary),
        ):
            if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
                raise ValueError(
                    f"Received an invalid value for argument `{side}_vocabulary`, expected a "
                    f"Vocabulary or None, got {vocabulary!r}."
                )
            if sequence and vocabulary is None and not (side == "source" and self._captions):
                raise ValueError(
                    f"Received an invalid value for argument `{side}_vocabulary`, expected a "
                    "Vocabulary for a task whose targets are of kind 'sequence', got None."
                )
        if sequence and self.inputs.kind not in ("tokens", "image"):
            raise ValueError(
                "Received an invalid value for argument `inputs`, expected a SequenceSpec of "
                f"kind 'tokens' or an ImageSpec for a task whose targets are of kind "
                f"'sequence', got {self.inputs!r}."
            )
        if self.target_vocabulary is not None and not sequence:
            raise ValueError(
                "Received an invalid value for argument `target_vocabulary`, expected None "
                f"for targets of kind {self.targets.kind!r}, got {self.target_vocabulary!r}."
            )
        if self.source_vocabulary is not None:
            if getattr(self.inputs, "kind", None) != "tokens":
                raise ValueError(
                    "Received an invalid value for argument `source_vocabulary`, expected None "
                    f"for inputs that are not token ids, got {self.source_vocabulary!r}."
                )
            self._check_vocabulary_size("source", self.source_vocabulary, "inputs")
            for split in ("train", "val"):
                self._check_ids(f"x_{split}", getattr(self, f"x_{split}"), self.inputs.vocab_size)
        if sequence:
            self._check_vocabulary_size("target", self.target_vocabulary, "targets")
            for split in ("train", "val"):
                y = getattr(self, f"y_{split}")
                self._check_ids(f"y_{split}", y, self.targets.vocab_size)
                ended = np.any(y == Vocabulary.END, axis=1)
                if not ended.all():
                    row = int(np.flatnonzero(~ended)[0])
                    raise ValueError(
                        f"`y_{split}` must end each target with the END id "
                        f"({Vocabulary.END}), but row {row} holds none: {y[row].tolist()[:20]}."
                    )

    def _check_vocabulary_size(self, side, vocabulary, spec_name):
        spec = getattr(self, spec_name)
        if len(vocabulary) != spec.vocab_size:
            raise ValueError(
                f"`{side}_vocabulary` holds {len(vocabulary)} tokens but `{spec_name}` has "
                f"vocab_size={spec.vocab_size}; they must match."
            )

    @staticmethod
    def _check_ids(name, ids, vocab_size):
        if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError(
                f"`{name}` must hold token ids in [0, {vocab_size}), got values from "
                f"{ids.min()} to {ids.max()}."
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

    @staticmethod
    def _check_pointers(name, pointers, num_positions):
        if pointers.size and (pointers.min() < 0 or pointers.max() >= num_positions):
            raise ValueError(
                f"`{name}` must hold input positions in [0, {num_positions}), got values from "
                f"{pointers.min()} to {pointers.max()}."
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
            **self._vocabulary_sizes(),
        }

    def _vocabulary_sizes(self) -> dict[str, int]:
        sizes = {}
        if self.source_vocabulary is not None:
            sizes["source_vocab_size"] = len(self.source_vocabulary)
        if self.target_vocabulary is not None:
            sizes["target_vocab_size"] = len(self.target_vocabulary)
        return sizes

    def summary(self) -> str:
        """A few lines for people: the task, its splits, inputs and targets."""
        params = ", ".join(f"{key}={value!r}" for key, value in self.params.items())
        inputs = self.inputs.to_dict()
        targets = self.targets.to_dict()
        lines = [
            f"{self.name}({params})",
            self.description,
            f"train: {self.num_train} sequences, validation: {self.num_val}",
            "inputs: " + ", ".join(f"{k}={v}" for k, v in inputs.items()),
            "targets: " + ", ".join(f"{k}={v}" for k, v in targets.items()),
        ]
        sizes = self._vocabulary_sizes()
        if sizes:
            lines.append("vocabularies: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
        return "\n".join(lines)

    def __repr__(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self.params.items())
        return (
            f"TaskData({self.name}({params}), train={self.x_train.shape}, val={self.x_val.shape})"
        )


# Longest sequence a generator makes: far past the 1,000 steps of the 1997
# paper's longest lags, and past anything a recurrent net trains on here.
MAX_LENGTH = 100_000

# Most values one input array may hold (2**28 float32 values, 1 GiB); checked
# before anything is allocated.
MAX_ELEMENTS = 2**28


def split_sizes(n, validation_split):
    """Returns `(validation_split, num_train, num_val)`, both splits at least 1."""
    validation_split = argument_checks.rate("validation_split", validation_split)
    num_val = round(n * validation_split)
    if num_val < 1 or num_val > n - 1:
        raise ValueError(
            f"Received an invalid value for argument `validation_split`, expected a fraction "
            f"that leaves at least one sequence in each split, got {validation_split!r} "
            f"with n={n!r} ({num_val} validation sequences)."
        )
    return validation_split, n - num_val, num_val


def check_size(n, per_sequence, what):
    """Refuses `n` sequences of `per_sequence` values if they exceed `MAX_ELEMENTS`."""
    if n * per_sequence > MAX_ELEMENTS:
        raise ValueError(
            f"Received an invalid value for argument `n`, expected at most "
            f"{MAX_ELEMENTS // per_sequence:,} sequences of {per_sequence:,} values ({what}) "
            f"so that the inputs fit in {MAX_ELEMENTS:,} values, got {n!r}."
        )
