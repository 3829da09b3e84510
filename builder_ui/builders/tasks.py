"""Task types for specs: each keras_seq task generator, with the pydantic model of its fields.

    task: {type: long_lag, lag: 100, n: 1000, encoding: ids}

maps to `keras_seq.tasks.long_lag(lag=100, n=1000, encoding="ids")`. The
fields and their defaults are the generator's arguments; the bounds repeat the
generator's own checks so that a spec is refused before any data is made (the
generator still checks, and its refusal is reported at `task.<argument>`).

Data files (`csv_sequences`, for classification and regression) are read by
`builder_ui.builders.data_files`.

Nothing here imports Keras or keras_seq until data is made.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from builder_ui.builders.base import TaskBuilder
from builder_ui.builders.registry import register_task
from builder_ui.specs import SpecError, TaskParams

# Mirrors keras_seq.tasks.base.MAX_LENGTH and MAX_ELEMENTS (checked by a test),
# so that validating a spec does not import Keras.
MAX_LENGTH = 100_000
MAX_ELEMENTS = 2**28
MAX_SEED = 2**32 - 1

Count = Annotated[int, Field(ge=2, le=MAX_ELEMENTS, description="Sequences, both splits.")]
Split = Annotated[
    float,
    Field(gt=0, lt=1, description="Fraction kept for validation, in (0, 1)."),
]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED, description="NumPy seed of the data.")]

# Mirror keras_seq.tasks.subword's MIN_VOCAB_SIZE and MAX_VOCAB_SIZE (checked by a test).
MIN_SUBWORD_VOCAB_SIZE = 8
MAX_SUBWORD_VOCAB_SIZE = 2**16


class _TextFields(TaskParams):
    """The tokenizer of a text task: whole words, or subword pieces learnt from training text.

    Args:
        tokenizer: `word` (whole words and punctuation marks), or `bpe` /
            `unigram` (SentencePiece pieces learnt from the training split
            only: a rare word is spelt from pieces instead of becoming `<unk>`).
        vocab_size: Ids of each subword vocabulary, its 4 special ids
            included; needed for `bpe` and `unigram`, refused for `word`.
    """

    tokenizer: Annotated[
        Literal["word", "bpe", "unigram"],
        Field(description="Whole words, or BPE / unigram subword pieces (SentencePiece)."),
    ] = "word"
    vocab_size: (
        Annotated[
            int,
            Field(
                ge=MIN_SUBWORD_VOCAB_SIZE,
                le=MAX_SUBWORD_VOCAB_SIZE,
                description="Ids per subword vocabulary, special ids included (bpe, unigram).",
            ),
        ]
        | None
    ) = None

    @model_validator(mode="after")
    def _vocab_size_for_subwords(self) -> _TextFields:
        if self.tokenizer == "word" and self.vocab_size is not None:
            raise ValueError(
                f"vocab_size: only for tokenizer bpe or unigram, got {self.vocab_size} with "
                "tokenizer word"
            )
        if self.tokenizer != "word" and self.vocab_size is None:
            raise ValueError(
                f"vocab_size: tokenizer {self.tokenizer} needs one, from "
                f"{MIN_SUBWORD_VOCAB_SIZE} to {MAX_SUBWORD_VOCAB_SIZE}"
            )
        return self

    def text_arguments(self) -> dict:
        """`tokenizer` and `vocab_size`, or nothing for a word task (its call as before)."""
        if self.tokenizer == "word":
            return {}
        return {"tokenizer": self.tokenizer, "vocab_size": self.vocab_size}


def _task_data() -> Any:
    """`keras_seq.tasks`, which makes or reads every task's data. It loads Keras: imported at
    a task's first load, after the process has chosen its Keras backend."""
    from keras_seq import tasks  # Keras loads with it, on the backend chosen by now

    return tasks


def _call(name: str, params: TaskParams) -> Any:
    """Call `keras_seq.tasks.<name>` with the spec's fields as keyword arguments."""
    arguments = params.model_dump(exclude={"type"})
    return getattr(_task_data(), name)(**arguments)


class LongLagParams(TaskParams):
    """Remember the first symbol across `lag` random distractors (Hochreiter & Schmidhuber 1997)."""

    type: Literal["long_lag"] = "long_lag"
    lag: Annotated[int, Field(ge=1, le=MAX_LENGTH, description="Input length p.")] = 50
    n: Count = 1000
    num_distractors: Annotated[
        int, Field(ge=1, le=1000, description="Size of the distractor alphabet.")
    ] = 8
    encoding: Annotated[
        Literal["one_hot", "ids"],
        Field(description="Inputs as one-hot vectors, or as token ids for an embedding."),
    ] = "one_hot"
    validation_split: Split = 0.2
    seed: Seed = 0


@register_task("long_lag")
class LongLag(TaskBuilder):
    params = LongLagParams
    description = "Long time lag (1997, exp. 2): keep one bit across random distractors."

    def kinds(self, params):
        return ("tokens" if params.encoding == "ids" else "numeric"), "classification"

    def load(self, params):
        return _call("long_lag", params)


class AddingProblemParams(TaskParams):
    """Add the two marked values of a long sequence (1997, experiment 4)."""

    type: Literal["adding_problem"] = "adding_problem"
    length: Annotated[int, Field(ge=2, le=MAX_LENGTH, description="Steps per sequence.")] = 50
    n: Count = 1000
    validation_split: Split = 0.2
    seed: Seed = 0


@register_task("adding_problem")
class AddingProblem(TaskBuilder):
    params = AddingProblemParams
    description = "Adding problem: regress the sum of two marked values of a long sequence."

    def kinds(self, params):
        return "numeric", "regression"

    def load(self, params):
        return _call("adding_problem", params)


class SortNumbersParams(TaskParams):
    """Point at the input numbers in increasing order (Vinyals et al. 2015)."""

    type: Literal["sort_numbers"] = "sort_numbers"
    length: Annotated[int, Field(ge=2, le=MAX_LENGTH, description="Numbers per sequence.")] = 5
    n: Count = 1000
    validation_split: Split = 0.2
    seed: Seed = 0


@register_task("sort_numbers")
class SortNumbers(TaskBuilder):
    params = SortNumbersParams
    description = "Sort numbers by pointing at them: the target is the sorting permutation."

    def kinds(self, params):
        return "numeric", "pointer"

    def load(self, params):
        return _call("sort_numbers", params)


class DigitsParams(TaskParams):
    """The 8×8 handwritten digits shipped with scikit-learn."""

    type: Literal["digits"] = "digits"
    validation_split: Split = 0.2
    seed: Seed = 0


@register_task("digits")
class Digits(TaskBuilder):
    params = DigitsParams
    description = "8×8 handwritten digits (scikit-learn), ten classes, for the ViT."

    def kinds(self, params):
        return "image", "classification"

    def load(self, params):
        return _call("digits", params)


class ShapesParams(TaskParams):
    """Generated images of four shapes at random places and scales."""

    type: Literal["shapes"] = "shapes"
    n: Count = 1000
    size: Annotated[int, Field(ge=8, le=1024, description="Height and width in pixels.")] = 16
    noise: Annotated[
        float, Field(ge=0, lt=1, description="Standard deviation of the pixel noise.")
    ] = 0.1
    validation_split: Split = 0.2
    seed: Seed = 0


@register_task("shapes")
class Shapes(TaskBuilder):
    params = ShapesParams
    description = "Images of circles, squares, triangles and crosses, any size, for the ViT."

    def kinds(self, params):
        return "image", "classification"

    def load(self, params):
        return _call("shapes", params)


# Mirror keras_seq.tasks.frames' limits (checked by a test).
MAX_FRAME_SIZE = 256
MAX_FRAMES = 100
MAX_SHAPES = 4
MAX_SPEED = 4


class MovingShapesParams(TaskParams):
    """Videos of shapes gliding and bouncing off the walls: predict the next frames."""

    type: Literal["moving_shapes"] = "moving_shapes"
    n: Count = 1000
    size: Annotated[
        int, Field(ge=8, le=MAX_FRAME_SIZE, description="Height and width of a frame in pixels.")
    ] = 16
    frames: Annotated[
        int, Field(ge=2, le=MAX_FRAMES, description="Frames per video, inputs and targets.")
    ] = 10
    predict: Annotated[
        int, Field(ge=1, le=MAX_FRAMES - 1, description="Frames to predict, the last ones.")
    ] = 5
    num_shapes: Annotated[int, Field(ge=1, le=MAX_SHAPES, description="Shapes per video.")] = 1
    max_speed: Annotated[
        int, Field(ge=1, le=MAX_SPEED, description="Largest velocity component, pixels/frame.")
    ] = 2
    noise: Annotated[
        float, Field(ge=0, lt=1, description="Standard deviation of the input pixel noise.")
    ] = 0.0
    validation_split: Split = 0.2
    seed: Seed = 0

    @model_validator(mode="after")
    def _inputs_left(self) -> MovingShapesParams:
        if self.predict >= self.frames:
            raise ValueError(
                f"predict: expected fewer than frames={self.frames} (the frames before them are "
                f"the inputs), got {self.predict}"
            )
        return self


@register_task("moving_shapes")
class MovingShapes(TaskBuilder):
    params = MovingShapesParams
    description = "Shapes that move and bounce (as Moving MNIST): predict the next frames."

    def kinds(self, params):
        return "frames", "frames"

    def load(self, params):
        return _call("moving_shapes", params)


class ShapeCaptionsParams(TaskParams):
    """Generated images of two coloured shapes, each with a caption naming both."""

    type: Literal["shape_captions"] = "shape_captions"
    n: Count = 3000
    size: Annotated[int, Field(ge=16, le=256, description="Height and width in pixels.")] = 32
    noise: Annotated[
        float, Field(ge=0, lt=1, description="Standard deviation of the pixel noise.")
    ] = 0.05
    validation_split: Split = 0.2
    seed: Seed = 0


@register_task("shape_captions")
class ShapeCaptions(TaskBuilder):
    params = ShapeCaptionsParams
    description = "Two coloured shapes per image and a caption naming both, for Show-Attend-Tell."

    def kinds(self, params):
        return "image", "sequence"

    def load(self, params):
        return _call("shape_captions", params)


class CsvSequencesParams(_TextFields):
    """Labelled sequences from a CSV or TSV file (format: `builder_ui.builders.data_files`).

    Args:
        path: The file; a relative path is taken from the working directory.
        inputs: `numeric` (`label, v_1, …, v_m` per row) or `tokens`
            (`label, text` per row).
        target: `classification` (class names) or `regression` (numbers).
        features: Numbers per step, numeric inputs only.
        delimiter: `auto` (tab for .tsv/.tab, else comma), `,`, `;` or a tab.
        header: Skip the first line.
        max_length: Most tokens per text.
        validation_split: Fraction of the rows kept for validation.
        seed: Seed of the shuffle before the split.
        max_bytes, max_rows, max_columns: Limits checked while reading.
        tokenizer, vocab_size: Words or subword pieces, text inputs only (see
            `_TextFields`).
    """

    type: Literal["csv_sequences"] = "csv_sequences"
    path: Annotated[str, Field(min_length=1, max_length=4096)]
    inputs: Literal["numeric", "tokens"] = "numeric"
    target: Literal["classification", "regression"] = "classification"
    features: Annotated[int, Field(ge=1, le=2**16)] = 1
    delimiter: Literal["auto", ",", ";", "\t"] = "auto"
    header: bool = False
    max_length: Annotated[int, Field(ge=1, le=MAX_LENGTH)] = 1000
    validation_split: Split = 0.2
    seed: Seed = 0
    max_bytes: Annotated[int, Field(ge=1, le=2**30)] = 100_000_000
    max_rows: Annotated[int, Field(ge=2, le=10_000_000)] = 1_000_000
    max_columns: Annotated[int, Field(ge=2, le=1_000_000)] = 100_000

    @model_validator(mode="after")
    def _features_for_numbers(self) -> CsvSequencesParams:
        if self.inputs == "tokens" and self.features != 1:
            raise ValueError(f"features: only for numeric inputs, got {self.features}")
        if self.inputs == "numeric" and self.tokenizer != "word":
            raise ValueError(f"tokenizer: only for text inputs, got {self.tokenizer}")
        return self


@register_task("csv_sequences")
class CsvSequences(TaskBuilder):
    params = CsvSequencesParams
    description = "Labelled sequences (numbers or text) from a CSV/TSV file."

    def kinds(self, params):
        return params.inputs, params.target

    def load(self, params):
        # The CSV reader makes keras_seq's task data (Keras loads with it, as in `_task_data`).
        from builder_ui.builders import data_files as data

        arguments = params.model_dump(exclude={"type", "tokenizer", "vocab_size"})
        try:
            return data.load_csv_sequences(**arguments, **params.text_arguments())
        except data.DataFileError as error:
            raise SpecError([("task.path", str(error))]) from None


# --- Sequence to sequence ----------------------------------------------------------------
# Mirrors keras_seq.tasks.sequences.MAX_SYMBOLS and keras_seq.tasks.translation's limits.
MAX_SYMBOLS = 10_000
MIN_SENTENCE_LENGTH = 4
MAX_SENTENCE_LENGTH = 200


class _SymbolParams(TaskParams):
    length: Annotated[int, Field(ge=1, le=MAX_LENGTH, description="Longest source.")] = 8
    n: Count = 1000
    vocab_size: Annotated[int, Field(ge=1, le=MAX_SYMBOLS, description="Number of symbols.")] = 10
    min_length: Annotated[
        int, Field(ge=1, le=MAX_LENGTH, description="Shortest source, at most `length`.")
    ] = 1
    validation_split: Split = 0.2
    seed: Seed = 0

    @model_validator(mode="after")
    def _lengths_in_order(self) -> _SymbolParams:
        if self.min_length > self.length:
            raise ValueError(
                f"min_length: expected at most length={self.length}, got {self.min_length}"
            )
        return self


class CopyParams(_SymbolParams):
    """Copy a variable-length sequence of symbols, then stop."""

    type: Literal["copy"] = "copy"


class ReverseParams(_SymbolParams):
    """Write a variable-length sequence of symbols backwards, then stop."""

    type: Literal["reverse"] = "reverse"


@register_task("copy")
class Copy(TaskBuilder):
    params = CopyParams
    description = "Copy a variable-length symbol sequence (seq2seq warm-up)."

    def kinds(self, params):
        return "tokens", "sequence"

    def load(self, params):
        return _call("copy", params)


@register_task("reverse")
class Reverse(TaskBuilder):
    params = ReverseParams
    description = "Write a symbol sequence backwards: long dependencies, easy with attention."

    def kinds(self, params):
        return "tokens", "sequence"

    def load(self, params):
        return _call("reverse", params)


class ToyTranslationParams(_TextFields):
    """English→French sentence pairs from a small grammar."""

    type: Literal["toy_translation"] = "toy_translation"
    n: Count = 2000
    min_len: Annotated[
        int,
        Field(
            ge=MIN_SENTENCE_LENGTH,
            le=MAX_SENTENCE_LENGTH,
            description="Shortest English sentence in tokens (the final '.' counted).",
        ),
    ] = 5
    max_len: Annotated[
        int,
        Field(
            ge=MIN_SENTENCE_LENGTH,
            le=MAX_SENTENCE_LENGTH,
            description="Longest English sentence in tokens, at least `min_len`.",
        ),
    ] = 20
    validation_split: Split = 0.1
    seed: Seed = 0

    @model_validator(mode="after")
    def _lengths_in_order(self) -> ToyTranslationParams:
        if self.min_len > self.max_len:
            raise ValueError(
                f"min_len: expected at most max_len={self.max_len}, got {self.min_len}"
            )
        return self


@register_task("toy_translation")
class ToyTranslation(TaskBuilder):
    params = ToyTranslationParams
    description = "English→French toy translation from a grammar (long sentences for attention)."

    def kinds(self, params):
        return "tokens", "sequence"

    def load(self, params):
        # A refused `vocab_size` (more than the text can fill) is reported at task.vocab_size.
        arguments = params.model_dump(exclude={"type", "tokenizer", "vocab_size"})
        return _task_data().toy_translation(**arguments, **params.text_arguments())


class ParallelTextParams(_TextFields):
    """A translation task from a UTF-8 file of `source<TAB>target` lines (Tatoeba/Anki format).

    Args:
        path: The file; a relative path is taken from the working directory.
        validation_split: Fraction of the pairs kept for validation.
        seed: Seed of the split.
        max_source_length, max_target_length: Longer pairs are dropped;
            null keeps every length.
        lowercase: Lowercase both sides (default false: translations keep their case).
        max_vocab_size: Most ids per vocabulary; rarer words become `<unk>`.
        malformed: `raise` on a line without a tab (with its number), or `skip` it.
        tokenizer, vocab_size: Words or subword pieces (see `_TextFields`).
    """

    type: Literal["parallel_text"] = "parallel_text"
    path: Annotated[str, Field(min_length=1, max_length=4096)]
    validation_split: Split = 0.1
    seed: Seed = 0
    max_source_length: Annotated[int, Field(ge=1, le=MAX_LENGTH)] | None = None
    max_target_length: Annotated[int, Field(ge=1, le=MAX_LENGTH)] | None = None
    lowercase: bool = False
    max_vocab_size: Annotated[int, Field(ge=5, le=2**20)] | None = None
    malformed: Literal["raise", "skip"] = "raise"


@register_task("parallel_text")
class ParallelText(TaskBuilder):
    params = ParallelTextParams
    description = "Translation pairs from a source<TAB>target text file."

    def kinds(self, params):
        return "tokens", "sequence"

    def load(self, params):
        arguments = params.model_dump(exclude={"type", "path", "tokenizer", "vocab_size"})
        try:
            return _task_data().load_parallel_text(
                params.path, **arguments, **params.text_arguments()
            )
        except (ValueError, OSError) as error:
            # A refused argument is named in the message; anything else is the file's fault.
            named = re.search(r"argument `(\w+)`", str(error))
            field = f"task.{named.group(1)}" if named else "task.path"
            raise SpecError([(field, str(error))]) from None
