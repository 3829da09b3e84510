"""Spec versions: `SPEC_VERSION` and the upgrades that bring older documents to it.

A spec of an older version is upgraded by the functions in `UPGRADES`, one
version at a time; a spec without a version, or of a version newer than this
code knows, is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from builder_ui.specs.errors import SpecError, shown

SPEC_VERSION = 1


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
