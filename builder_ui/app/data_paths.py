"""Which data files the app may read: its uploads folder and the `--data-dir` folders.

A spec names its data by path (`task.path` of `csv_sequences` and
`parallel_text`, and whatever path fields a plugin declares). The CLI reads the
user's own paths as they are; the app reads them for whoever can reach its page
or its API, so a spec with `task.path: /etc/passwd` would show that file's text
in a preview or a prediction. So in the app every data path must resolve
(`Path.resolve`: symlinks and `..` followed, a relative path taken from the
app's working directory, as the loader takes it) inside the uploads folder
(`<runs>/_uploads`) or a folder given with `keras-seq ui --data-dir DIR`;
anything else is refused at its field path before anything is read or queued.

Which fields are paths, for any task or model type (plugins included), without
a list to keep: a field whose type is a `pathlib` path (pydantic's `FilePath`,
`DirectoryPath` and `NewPath` too), whose JSON Schema `format` is a path, or
whose name is `path`, `file` or `dir` or ends in `_path`, `_file` or `_dir`
(plural too). Only text values are checked, so a flag that happens to be
called `header_file: true` is left alone. A sweep's values are walked the same
way (by name), and the queue checks every expanded trial as well.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from builder_ui.specs import ExperimentSpec, SpecError, shown

PATH_NAME = re.compile(r"(?:^|_)(?:path|file|dir)s?$")
PATH_FORMATS = ("path", "file-path", "directory-path")
SECTIONS = ("task", "model", "train")
MAX_PATH_SHOWN = 500  # a path is shown whole up to this many characters


def _is_path_type(annotation: Any) -> bool:
    """Whether a field's type is, or holds (`Path | None`, `list[Path]`), a `pathlib` path."""
    if isinstance(annotation, type) and issubclass(annotation, PurePath):
        return True
    return any(_is_path_type(arg) for arg in get_args(annotation))


def _schema_format(info: FieldInfo) -> str | None:
    extra = info.json_schema_extra
    return extra.get("format") if isinstance(extra, dict) else None


def is_path_field(name: str, info: FieldInfo | None = None) -> bool:
    """Whether a spec field names a file: by its type, its schema format or its name."""
    if info is not None and (
        _is_path_type(info.annotation) or _schema_format(info) in PATH_FORMATS
    ):
        return True
    return bool(PATH_NAME.search(name))


def _paths_in(where: str, value: Any) -> Iterator[tuple[str, str]]:
    """`(field, text)` for the text values of a path field (one, or each of a list)."""
    if isinstance(value, str | PurePath):
        yield where, os.fspath(value)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _paths_in(f"{where}[{index}]", item)


def _walk_model(where: str, model: BaseModel) -> Iterator[tuple[str, str]]:
    """The path values of a validated section and its nested sections (`model.encoder`)."""
    for name, info in type(model).model_fields.items():
        value = getattr(model, name, None)
        field = f"{where}.{name}"
        if isinstance(value, BaseModel):
            yield from _walk_model(field, value)
        elif isinstance(value, list | tuple) and any(isinstance(v, BaseModel) for v in value):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _walk_model(f"{field}[{index}]", item)
        elif is_path_field(name, info):
            yield from _paths_in(field, value)


def _walk_data(where: str, name: str, value: Any) -> Iterator[tuple[str, str]]:
    """The path values of raw data (a sweep's values), by field name only."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk_data(f"{where}.{key}", str(key), item)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _walk_data(f"{where}[{index}]", name, item)
    elif isinstance(value, str | PurePath) and is_path_field(name):
        yield where, os.fspath(value)


def spec_paths(spec: ExperimentSpec) -> list[tuple[str, str]]:
    """Every data path a spec names, as `(field path, value)`, its sweep's values included."""
    found = [
        pair
        for section in SECTIONS
        if isinstance(getattr(spec, section, None), BaseModel)
        for pair in _walk_model(section, getattr(spec, section))
    ]
    typed = {field for field, _ in found}
    for key, values in (spec.sweep.parameters if spec.sweep else {}).items():
        if not isinstance(values, list):  # a range: numbers, no path
            continue
        name = key.rsplit(".", 1)[-1]
        where = f"sweep.parameters[{key!r}]".replace("'", '"')
        for index, value in enumerate(values):
            if key in typed and isinstance(value, str | PurePath):
                found.append((f"{where}[{index}]", os.fspath(value)))
            else:
                found.extend(_walk_data(f"{where}[{index}]", name, value))
    return found


def _quoted(value: str) -> str:
    """The value whole, as the user wrote it (a long one cut, as every spec message does)."""
    return repr(value) if len(value) <= MAX_PATH_SHOWN else shown(value)


def _resolve(text: str) -> Path | None:
    try:
        return Path(text).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return None


@dataclass(frozen=True)
class DataPaths:
    """The folders an app reads data from: its uploads folder, then the `--data-dir` folders.

    Args:
        uploads: The uploads folder (`<runs>/_uploads`).
        data_dirs: The allow-listed data directories (default: none).
    """

    uploads: Path
    data_dirs: tuple[Path, ...] = ()

    @classmethod
    def of(cls, uploads: str | os.PathLike, data_dirs: Iterable[str | os.PathLike] = ()):
        """The rule for these folders, each resolved once (symlinks followed)."""
        return cls(Path(uploads).resolve(), tuple(Path(d).resolve() for d in data_dirs))

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.uploads, *self.data_dirs)

    def allows(self, text: str) -> bool:
        """Whether the path resolves inside one of the roots."""
        resolved = _resolve(text)
        return resolved is not None and any(resolved.is_relative_to(r) for r in self.roots)

    def refusal(self, value: str) -> str:
        """The message for a path outside the roots: where the app reads, how to add a folder."""
        dirs = ", ".join(str(d) for d in self.data_dirs) or "none given"
        return (
            f"the app reads data files only from its uploads folder ({self.uploads}) or a "
            f"folder given with `keras-seq ui --data-dir DIR` ({dirs}), with symlinks and `..` "
            f"followed; got {_quoted(value)}. Upload the file in the Build tab, or restart the "
            "app with --data-dir naming its folder."
        )

    def problems(self, specs: Sequence[ExperimentSpec]) -> list[tuple[str, str]]:
        """`(field path, message)` for every path of `specs` outside the roots (each once)."""
        problems: list[tuple[str, str]] = []
        for spec in specs:
            for field, value in spec_paths(spec):
                problem = (field, self.refusal(value))
                if not self.allows(value) and problem not in problems:
                    problems.append(problem)
        return problems

    def check(self, *specs: ExperimentSpec) -> None:
        """Refuse specs that name a data path outside the roots; nothing is read.

        Raises:
            SpecError: each such path at its field (e.g. `task.path`), with its value.
        """
        problems = self.problems(specs)
        if problems:
            raise SpecError(problems)
