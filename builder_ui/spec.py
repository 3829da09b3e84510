"""Experiment specs: what to train, on what, and how, as validated data.

An experiment spec is a small document, written in YAML or JSON::

    version: 1
    name: lstm-long-lag
    task: {type: long_lag, lag: 50, n: 1000}
    model: {type: sequence_classifier, encoder: {type: rnn, cell: lstm, units: 32}}
    train: {epochs: 5, batch_size: 32, learning_rate: 0.01}

`task.type` and `model.type` pick a registered task and model builder
(`builder_ui.registry`); each brings its own pydantic model for its fields.
Because plugins add types at run time, a spec is validated in two steps: first
the envelope (`version`, `name`, `train`, `sweep`, and `task`/`model` as
`{type, ...}` mappings), then `task` and `model` against the model of the
builder their `type` names. Every problem found is reported with its full
field path, the value and what is allowed, one per line, in one `SpecError`:

    model.encoder.units: expected an integer ≥ 1, got -3
    train.optimizer: expected one of 'adam', 'sgd', 'rmsprop' or 'adamw', got 'adagrad'

Specs are versioned (`SPEC_VERSION`). A spec of an older version is upgraded
by the functions in `UPGRADES`, one version at a time; a spec without a
version, or of a version newer than this code knows, is refused.

Validation here needs no Keras: the builders import it only when they build.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

SPEC_VERSION = 1

# A spec is a page of text; anything larger is not a spec.
MAX_SPEC_BYTES = 1_000_000
# The longest value repr shown in an error message.
_MAX_SHOWN = 80
# Experiment names become parts of file names and run labels.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
SPEC_SUFFIXES = (".yaml", ".yml", ".json")

OPTIMIZERS = ("adam", "sgd", "rmsprop", "adamw")
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
MAX_EPOCHS = 100_000
MAX_BATCH_SIZE = 2**20
MAX_SEED = 2**32 - 1


# ---------------------------------------------------------------------------
# Errors


class SpecError(ValueError):
    """A spec that cannot be used: every problem, one per line, each naming its field.

    Attributes:
        problems: `(path, message)` pairs, e.g. `("model.units", "expected an
            integer ≥ 1, got -3")`. `path` is `""` for a problem with the
            whole document (malformed YAML, not a mapping).
    """

    def __init__(self, problems: list[tuple[str, str]] | str, *, path: str = ""):
        if isinstance(problems, str):
            problems = [(path, problems)]
        self.problems = list(problems)
        super().__init__("\n".join(_line(p, m) for p, m in self.problems))

    def prefixed(self, prefix: str) -> SpecError:
        """The same problems, their paths under `prefix` (e.g. `"task"`)."""
        return SpecError([(_join(prefix, path), message) for path, message in self.problems])


def _line(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def shown(value: Any) -> str:
    """A short, readable rendering of a value received in a spec."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


# ---------------------------------------------------------------------------
# Base models


class StrictModel(BaseModel):
    """Base of every spec model: unknown fields refused, no silent type coercion, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TaskParams(StrictModel):
    """Base of a task type's fields; subclasses declare `type: Literal["their_name"]`."""

    type: str


class ModelParams(StrictModel):
    """Base of a model type's fields; subclasses declare `type: Literal["their_name"]`."""

    type: str


PositiveInt = Annotated[int, Field(ge=1)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class EarlyStoppingSpec(StrictModel):
    """Stop when the monitored metric has not improved for `patience` epochs.

    Args:
        monitor: Metric name (e.g. `"val_loss"`); default: the model's main
            validation metric (`Prepared.monitor_metric`).
        patience: Epochs without improvement before stopping.
        min_delta: Smallest change that counts as an improvement.
    """

    monitor: str | None = None
    patience: Annotated[int, Field(ge=0, le=MAX_EPOCHS)] = 5
    min_delta: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0


class TrainSpec(StrictModel):
    """How to train: optimiser, schedule, seed, precision and devices.

    Args:
        epochs: Passes over the training split.
        batch_size: Examples per gradient step.
        optimizer: `adam`, `sgd`, `rmsprop` or `adamw`.
        learning_rate: Step size of the optimiser.
        clipnorm: Clip each gradient to this norm; null for no clipping.
        seed: Seeds Python, NumPy and the backend before the model is built.
        mixed_precision: `auto` (mixed float16 on a GPU, float32 on a CPU),
            `float32`, `mixed_float16` or `mixed_bfloat16`.
        early_stopping: Stop early (see `EarlyStoppingSpec`), or null.
        distribution: null (one device) or `mirrored` (data-parallel over
            all local devices).
        tensorboard: Write TensorBoard logs beside the run's artifacts.
    """

    epochs: Annotated[int, Field(ge=1, le=MAX_EPOCHS)] = 10
    batch_size: Annotated[int, Field(ge=1, le=MAX_BATCH_SIZE)] = 32
    optimizer: Literal["adam", "sgd", "rmsprop", "adamw"] = "adam"
    learning_rate: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)] = 1e-3
    clipnorm: PositiveFloat | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    mixed_precision: Literal["auto", "float32", "mixed_float16", "mixed_bfloat16"] = "auto"
    early_stopping: EarlyStoppingSpec | None = None
    distribution: Literal["mirrored"] | None = None
    tensorboard: bool = False


MAX_SWEEP_TRIALS = 10_000


class SweepSpec(StrictModel):
    """A family of experiments: values to try for some fields of the spec.

    Args:
        method: `grid` (every combination) or `random` (`num_trials`
            distinct combinations drawn with `seed`).
        num_trials: Trials to draw; required for `random`, not allowed for
            `grid`.
        seed: Seed of the random draw.
        parameters: Field path (`model.encoder.units`, `train.learning_rate`)
            to the list of values to try.
    """

    method: Literal["grid", "random"] = "grid"
    num_trials: Annotated[int, Field(ge=1, le=MAX_SWEEP_TRIALS)] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    parameters: Annotated[dict[str, Annotated[list[Any], Field(min_length=1)]], Field(min_length=1)]

    @model_validator(mode="after")
    def _trials_match_method(self) -> SweepSpec:
        if self.method == "random" and self.num_trials is None:
            raise ValueError("num_trials: required when method is 'random'")
        if self.method == "grid" and self.num_trials is not None:
            raise ValueError(
                f"num_trials: only used when method is 'random' (grid tries every "
                f"combination), got {self.num_trials}"
            )
        return self


class ExperimentSpec(StrictModel):
    """A validated experiment: a task, a model, how to train it and an optional sweep.

    Make one with `load_spec` (from a file, text or dict), which reports every
    problem as a `SpecError`. `task` and `model` are instances of the params
    models of the registered types their `type` names.
    """

    version: Literal[1] = SPEC_VERSION
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    task: SerializeAsAny[TaskParams]
    model: SerializeAsAny[ModelParams]
    train: TrainSpec = Field(default_factory=TrainSpec)
    sweep: SweepSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _resolve_components(cls, data: Any) -> Any:
        # Constructing directly from a dict goes through the registry as well.
        if isinstance(data, Mapping) and any(
            isinstance(data.get(key), Mapping) for key in ("task", "model")
        ):
            data = dict(data)
            problems = []
            for key in ("task", "model"):
                if isinstance(data.get(key), Mapping):
                    try:
                        data[key] = validate_component(key, data[key])
                    except SpecError as error:
                        problems.extend(error.problems)
            if problems:
                raise ValueError(str(SpecError(problems)))
        return data

    @field_validator("task", "model", mode="after")
    @classmethod
    def _registered_instance(cls, value: StrictModel) -> StrictModel:
        if type(value) in (TaskParams, ModelParams):
            raise ValueError(f"type {value.type!r} must be validated by its registered builder")
        return value

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentSpec:
        """Validate a dict (upgrading older versions); raise `SpecError` listing every problem."""
        return validate_spec(data)

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON-compatible data (every field, defaults included)."""
        return self.model_dump(mode="json")


class _Envelope(StrictModel):
    """Step one of validation: everything but the fields of `task` and `model`."""

    version: Literal[1]
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    task: dict[str, Any]
    model: dict[str, Any]
    train: TrainSpec = Field(default_factory=TrainSpec)
    sweep: SweepSpec | None = None


# ---------------------------------------------------------------------------
# Versions


def _upgrade_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (the draft format) called the learning rate `train.lr`."""
    train = data.get("train")
    if isinstance(train, dict) and "lr" in train:
        if "learning_rate" in train:
            raise SpecError(
                [("train.lr", "version 0 field renamed to train.learning_rate; give only one")]
            )
        train = dict(train)
        train["learning_rate"] = train.pop("lr")
        data["train"] = train
    return data


# UPGRADES[v] turns a version-v document into a version-(v + 1) one.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _upgrade_0_to_1}


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """Bring a spec document to `SPEC_VERSION`, one version at a time, or refuse it.

    Raises:
        SpecError: for a missing or non-integer version, a version newer than
            `SPEC_VERSION`, or an old one with no upgrade path.
    """
    data = copy.deepcopy(dict(data))
    if "version" not in data:
        raise SpecError(
            [("version", f"missing; add `version: {SPEC_VERSION}` (the current spec version)")]
        )
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise SpecError([("version", f"expected an integer, got {shown(version)}")])
    if version > SPEC_VERSION:
        raise SpecError(
            [
                (
                    "version",
                    f"version {version} is newer than this keras_seq understands (up to "
                    f"{SPEC_VERSION}); upgrade keras_seq to read it",
                )
            ]
        )
    while version < SPEC_VERSION:
        if version not in UPGRADES:
            raise SpecError(
                [
                    (
                        "version",
                        f"version {version} is no longer supported and cannot be upgraded; "
                        f"known versions: {', '.join(map(str, sorted([*UPGRADES, SPEC_VERSION])))}",
                    )
                ]
            )
        data = UPGRADES[version](data)
        version += 1
        data["version"] = version
    return data


# ---------------------------------------------------------------------------
# Validation


def validate_component(kind: str, data: Mapping[str, Any]) -> StrictModel:
    """Validate a `task` or `model` mapping with the params model of its registered type.

    Args:
        kind: `"task"` or `"model"`.
        data: The mapping, with its `type`.

    Returns:
        An instance of the registered params model.

    Raises:
        SpecError: naming `task.type` / `model.type` for an unknown type
            (listing the registered ones), or each bad field by its path.
    """
    from builder_ui import registry

    type_name = data.get("type")
    if "type" not in data:
        known = registry.task_types() if kind == "task" else registry.model_types()
        raise SpecError([(f"{kind}.type", f"missing; expected one of {_choices(known)}")])
    params_cls = registry.params_model(kind, type_name)  # raises SpecError when unknown
    try:
        return params_cls.model_validate(dict(data))
    except ValidationError as error:
        raise SpecError(problems_from(error, params_cls)).prefixed(kind) from None


def validate_spec(data: Mapping[str, Any]) -> ExperimentSpec:
    """Validate a spec document (a dict), upgrading older versions; see the module docstring.

    Raises:
        SpecError: listing every problem found, one per line.
    """
    if not isinstance(data, Mapping):
        raise SpecError(
            f"expected a mapping of spec fields (version, name, task, model, ...), got "
            f"{type(data).__name__} {shown(data)}"
        )
    data = upgrade(data)
    problems: list[tuple[str, str]] = []
    try:
        envelope = _Envelope.model_validate(data)
    except ValidationError as error:
        problems.extend(problems_from(error, _Envelope))
        envelope = None
    components = {}
    for kind in ("task", "model"):
        if isinstance(data.get(kind), Mapping):
            try:
                components[kind] = validate_component(kind, data[kind])
            except SpecError as error:
                problems.extend(error.problems)
    if problems:
        raise SpecError(_in_document_order(_unique(problems)))
    spec = ExperimentSpec.model_validate({**envelope.model_dump(), **components})
    if spec.sweep is not None:
        from builder_ui import sweeps

        sweeps.check_paths(spec)
    return spec


def _unique(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(problems))


_SECTIONS = ("version", "name", "task", "model", "train", "sweep")


def _in_document_order(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Sort problems by section (task before model before train), stable within one."""

    def section(problem: tuple[str, str]) -> int:
        head = re.split(r"[.\[]", problem[0], maxsplit=1)[0]
        return _SECTIONS.index(head) if head in _SECTIONS else len(_SECTIONS)

    return sorted(problems, key=section)


# ---------------------------------------------------------------------------
# Loading and dumping


class _SpecLoader(yaml.SafeLoader):
    """Safe YAML that refuses duplicate keys and reads `1e-3` as a number (YAML 1.2)."""


def _construct_mapping(loader: _SpecLoader, node: yaml.MappingNode, deep: bool = False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found duplicate key {key!r} (first on line {seen[key] + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_SpecLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, source: str = "") -> Any:
    """Parse YAML text safely; a syntax error becomes a `SpecError` with its line and column."""
    try:
        return yaml.load(text, Loader=_SpecLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        problem = error.problem or error.context or "unreadable"
        raise SpecError(f"{_source(source)}malformed YAML at {where}: {problem}") from None
    except yaml.YAMLError as error:
        raise SpecError(f"{_source(source)}malformed YAML: {error}") from None


def parse_json(text: str, source: str = "") -> Any:
    """Parse JSON text; a syntax error becomes a `SpecError` with its line and column."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise SpecError(
            f"{_source(source)}malformed JSON at line {error.lineno}, column "
            f"{error.colno}: {error.msg}"
        ) from None


def _source(source: str) -> str:
    return f"{source}: " if source else ""


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def read_spec_file(path: str | Path) -> Any:
    """Read a `.yaml`, `.yml` or `.json` spec file into plain data (not validated)."""
    path = Path(path)
    source = str(path)
    if path.suffix.lower() not in SPEC_SUFFIXES:
        raise SpecError(
            f"{source}: expected a file ending in {', '.join(SPEC_SUFFIXES)}, got {path.suffix!r}"
        )
    if not path.is_file():
        raise SpecError(f"{source}: no such spec file")
    size = path.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"{source}: {size:,} bytes is too large for a spec (at most {MAX_SPEC_BYTES:,})"
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SpecError(f"{source}: not UTF-8 text (line {line}: {error.reason})") from None
    if path.suffix.lower() == ".json":
        return parse_json(text, source)
    return parse_yaml(text, source)


def load_spec(source: str | Path | Mapping[str, Any] | ExperimentSpec) -> ExperimentSpec:
    """Read and validate a spec from a file path, YAML or JSON text, or a dict.

    Args:
        source: A `Path`, or a string naming an existing `.yaml`/`.yml`/`.json`
            file; otherwise a string is parsed as YAML (which JSON also is); a
            mapping is validated as it is; an `ExperimentSpec` is returned.

    Returns:
        The validated `ExperimentSpec` (upgraded to `SPEC_VERSION`).

    Raises:
        SpecError: for an unreadable file, malformed YAML/JSON (with the
            line), and every invalid field (with its path).
    """
    if isinstance(source, ExperimentSpec):
        return source
    if isinstance(source, Mapping):
        return validate_spec(source)
    if isinstance(source, Path):
        return validate_spec(read_spec_file(source))
    if not isinstance(source, str):
        raise SpecError(
            f"expected a path, YAML or JSON text, or a mapping, got {type(source).__name__}"
        )
    if _looks_like_path(source):
        return validate_spec(read_spec_file(source))
    return validate_spec(parse_yaml(source))


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and text.strip().lower().endswith(SPEC_SUFFIXES)


def dump_spec(spec: ExperimentSpec, format: str = "yaml") -> str:
    """Write a spec as YAML or JSON text that `load_spec` reads back to an equal spec.

    Args:
        spec: The spec.
        format: `"yaml"` (default) or `"json"`.
    """
    if format not in ("yaml", "json"):
        raise ValueError(
            f"Received an invalid value for argument `format`, expected 'yaml' or 'json', "
            f"got {format!r}."
        )
    data = spec.to_dict()
    if format == "json":
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


# ---------------------------------------------------------------------------
# JSON Schema


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec, with every registered task and model type.

    `task` and `model` are each a `oneOf` over the registered types,
    discriminated by `type`. Plugins loaded so far are included.
    """
    from builder_ui import registry

    def union(classes):
        classes = tuple(classes)
        if len(classes) == 1:
            return classes[0]
        return Annotated[Union[classes], Field(discriminator="type")]  # noqa: UP007

    tasks = [registry.params_model("task", name) for name in registry.task_types()]
    models = [registry.params_model("model", name) for name in registry.model_types()]
    document = create_model(
        "ExperimentSpec",
        __base__=StrictModel,
        __doc__=ExperimentSpec.__doc__,
        version=(Literal[1], Field(description=f"Spec format version, {SPEC_VERSION}.")),
        name=(Annotated[str, Field(pattern=NAME_PATTERN)], ...),
        task=(union(tasks), ...),
        model=(union(models), ...),
        train=(TrainSpec, Field(default_factory=TrainSpec)),
        sweep=(SweepSpec | None, None),
    )
    schema = document.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "keras_seq experiment spec"
    return schema


# ---------------------------------------------------------------------------
# Pydantic errors → (path, message)


def problems_from(error: ValidationError, root: type[BaseModel]) -> list[tuple[str, str]]:
    """Turn a pydantic `ValidationError` on `root` into `(path, message)` problems."""
    problems = []
    for item in error.errors(include_url=False):
        parts, annotation, parent = _walk(root, item["loc"])
        message = _describe(item, annotation, parent)
        path_parts = list(parts)
        # An "after" model validator names its field as "field: message".
        if item["type"] == "value_error":
            text = str(item.get("ctx", {}).get("error", item["msg"]))
            head, sep, rest = text.partition(": ")
            if sep and re.fullmatch(r"[A-Za-z_][\w.]*", head):
                path_parts.extend(head.split("."))
                message = rest
        problems.append((_format_path(path_parts), message))
    return problems


def _format_path(parts: list[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_]\w*", part):
            text = f"{text}.{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        return [_unwrap(a) for a in get_args(annotation)]
    return []


def _tag(cls: Any) -> str | None:
    if isinstance(cls, type) and issubclass(cls, BaseModel) and "type" in cls.model_fields:
        args = get_args(_unwrap(cls.model_fields["type"].annotation))
        if len(args) == 1:
            return args[0]
    return None


def _walk(root: type[BaseModel], loc: tuple) -> tuple[list, Any, Any]:
    """Follow a pydantic error location through the models; skip union tags.

    Returns the path parts, the annotation of the field reached (or None) and
    the model holding it (for listing allowed fields).
    """
    parts: list = []
    annotation: Any = root
    parent: Any = None
    for item in loc:
        annotation = _unwrap(annotation)
        members = _members(annotation)
        if members:
            chosen = next(
                (m for m in members if item in (_tag(m), getattr(m, "__name__", None))), None
            )
            if chosen is not None:
                annotation = chosen
                continue
            non_null = [m for m in members if m is not type(None)]
            annotation = non_null[0] if len(non_null) == 1 else None
            annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            parent = annotation
            field = annotation.model_fields.get(item) if isinstance(item, str) else None
            annotation = field.annotation if field is not None else None
            parts.append(item)
            continue
        origin = get_origin(annotation)
        if origin is dict:
            annotation = get_args(annotation)[1] if get_args(annotation) else None
        elif origin is list:
            annotation = get_args(annotation)[0] if get_args(annotation) else None
        else:
            annotation = None
        parent = None
        parts.append(item)
    return parts, annotation, parent


def _number_kind(annotation: Any) -> str:
    annotation = _unwrap(annotation)
    members = [m for m in _members(annotation) if m is not type(None)]
    if len(members) == 1:
        annotation = members[0]
    return "an integer" if annotation is int else "a number"


def _describe(item: Mapping[str, Any], annotation: Any, parent: Any) -> str:
    kind, ctx, value = item["type"], item.get("ctx") or {}, item.get("input")
    got = f", got {shown(value)}"
    bounds = {
        "greater_than_equal": ("≥", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("≤", "le"),
        "less_than": ("<", "lt"),
    }
    if kind in bounds:
        sign, key = bounds[kind]
        bound = ctx.get(key)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"expected {_number_kind(annotation)} {sign} {bound}{got}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer{got}"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number{got}"
    if kind == "finite_number":
        return f"expected a finite number{got}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false{got}"
    if kind == "string_type":
        return f"expected a string{got}"
    if kind == "string_pattern_mismatch":
        return f"expected a string matching {ctx.get('pattern')}{got}"
    if kind == "string_too_short":
        return f"expected a non-empty string{got}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}{got}"
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        allowed = sorted(parent.model_fields) if parent is not None else []
        hint = f"; allowed fields: {', '.join(allowed)}" if allowed else ""
        return f"unknown field{hint}"
    if kind == "union_tag_invalid":
        return f"unknown type {shown(ctx.get('tag'))}; expected one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return f"missing the `type` field that says which kind it is{got}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping of fields{got}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list{got}"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length')} item(s){got}"
    if kind == "too_long":
        return f"expected at most {ctx.get('max_length')} item(s){got}"
    if kind == "value_error":
        return str(ctx.get("error", item["msg"]))
    return f"{item['msg'][:1].lower()}{item['msg'][1:]}{got}"


def _choices(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names) if names else "(none registered)"


def is_finite_number(value: Any) -> bool:
    """True for an int or float (not a bool) that is finite."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
