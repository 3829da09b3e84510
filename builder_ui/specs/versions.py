"""Spec versions: `SPEC_VERSION` and the upgrades that bring older documents to it.

A spec of an older version is upgraded by the functions in `UPGRADES`, one
version at a time; a spec without a version, or of a version newer than this
code knows, is refused. The upgrades also rewrite the fields of the built-in
task and model types (a document's history is the spec language's, whoever
registers the types), and the sweep parameters that name them.

- 0 → 1: `train.lr` is `train.learning_rate`.
- 1 → 2: one name per idea, as in keras_seq's Python API: a Transformer's
  width is `embedding_dim` (was `embed_dim`), positions are `positions` (was
  `positional` in a sequence model's encoder); and a `seq2seq` model's
  `architecture` is a section of its own, `{type: rnn | transformer, ...}`
  holding that architecture's fields, instead of a string beside the fields
  of both (which had to stay null for the other one).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from builder_ui.specs.errors import SpecError, shown

SPEC_VERSION = 2


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


# Version 1 fields of the seq2seq model that version 2 moves into `model.architecture`, with
# their version 2 names.
_SEQ2SEQ_ARCHITECTURE_FIELDS = {
    "cell": "cell",
    "units": "units",
    "bidirectional": "bidirectional",
    "attention": "attention",
    "attention_units": "attention_units",
    "input_feeding": "input_feeding",
    "embedding_dim": "embedding_dim",
    "embed_dim": "embedding_dim",
    "num_heads": "num_heads",
    "ff_dim": "ff_dim",
    "norm_first": "norm_first",
    "max_length": "max_length",
    "positions": "positions",
}


def _renamed(section: dict[str, Any], renames: Mapping[str, str], where: str) -> dict[str, Any]:
    """`section` with its keys renamed; refuses a section that gives both names of one field."""
    section = dict(section)
    for old, new in renames.items():
        if old in section:
            if new in section and old != new:
                raise SpecError(
                    [(f"{where}.{old}", f"version 1 field renamed to {where}.{new}; give only one")]
                )
            section[new] = section.pop(old)
    return section


def _version_1_paths(model: Any) -> dict[str, str]:
    """Sweep parameter paths of version 1 → version 2, for the model section given."""
    if not isinstance(model, dict):
        return {}
    kind = model.get("type")
    if kind in ("sequence_classifier", "sequence_regressor"):
        return {
            "model.encoder.embed_dim": "model.encoder.embedding_dim",
            "model.encoder.positional": "model.encoder.positions",
        }
    if kind == "vision_transformer":
        return {"model.embed_dim": "model.embedding_dim"}
    if kind == "seq2seq":
        return {
            f"model.{old}": f"model.architecture.{new}"
            for old, new in _SEQ2SEQ_ARCHITECTURE_FIELDS.items()
        }
    return {}


_ENCODER_RENAMES = {"embed_dim": "embedding_dim", "positional": "positions"}


def _model_1_to_2(model: Any, where: str = "model") -> Any:
    """A version 1 `model:` section in version 2 terms (anything else is left to validation)."""
    if not isinstance(model, dict):
        return model
    kind = model.get("type")
    if kind in ("sequence_classifier", "sequence_regressor"):
        encoder = model.get("encoder")
        if isinstance(encoder, dict):
            return {**model, "encoder": _renamed(encoder, _ENCODER_RENAMES, f"{where}.encoder")}
    elif kind == "vision_transformer":
        return _renamed(model, {"embed_dim": "embedding_dim"}, where)
    elif kind == "seq2seq" and not isinstance(model.get("architecture"), dict):
        model = dict(model)
        architecture = {"type": model.pop("architecture", "rnn")}
        moved = {key: model.pop(key) for key in list(model) if key in _SEQ2SEQ_ARCHITECTURE_FIELDS}
        moved = _renamed(moved, {"embed_dim": "embedding_dim"}, where)
        # Version 1 wrote null for "the default" (and for the other architecture's fields).
        architecture.update({key: value for key, value in moved.items() if value is not None})
        model["architecture"] = architecture
    return model


def _sweep_values_1_to_2(key: str, values: Any, model: Any) -> Any:
    """Sweep values that are whole version 1 sections, in version 2 terms."""
    if not isinstance(values, list):
        return values
    if key == "model":
        return [_model_1_to_2(value) for value in values]
    kind = model.get("type") if isinstance(model, dict) else None
    if key == "model.encoder" and kind in ("sequence_classifier", "sequence_regressor"):
        return [
            _renamed(value, _ENCODER_RENAMES, "model.encoder") if isinstance(value, dict) else value
            for value in values
        ]
    return values


def _upgrade_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 named one idea two ways and flattened seq2seq's architectures (see above)."""
    model = data.get("model")
    paths = _version_1_paths(model)
    if "model" in data:
        data["model"] = _model_1_to_2(model)
    sweep = data.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("parameters"), dict):
        parameters = {}
        for key, values in sweep["parameters"].items():
            new = paths.get(key, key)
            if new in parameters:
                raise SpecError(
                    [(f"sweep.parameters[{key!r}]", f"version 1 path renamed to {new!r}; give one")]
                )
            parameters[new] = _sweep_values_1_to_2(key, values, model)
        data["sweep"] = {**sweep, "parameters": parameters}
    return data


# UPGRADES[v] turns a version-v document into a version-(v + 1) one.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _upgrade_0_to_1,
    1: _upgrade_1_to_2,
}


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
