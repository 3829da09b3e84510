"""Files written whole or not at all: a temporary name beside the target, then a rename.

`os.replace` within one directory is atomic on POSIX and Windows, so a reader (the app,
another process, a user's shell) sees the old file or the new one, never half of one, and
a write that fails or is interrupted leaves the old one as it was. Every module of
builder_ui that writes a file a user or another process may read goes through here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside `target`, renamed onto it when the block succeeds.

    Write a file or make a directory at the path the block gets; its name keeps
    `target`'s suffix (Keras picks a format by it, `savefig` too). When the block
    ends without an exception, the path replaces `target`: a file by one rename; a
    directory by moving the old one aside, renaming the new one in, then deleting
    the old. When it raises, whatever it wrote is removed and `target` is untouched.
    The parent directory is made if missing.

    Example:

    >>> with atomic_path(run_dir / "model.keras") as path:
    ...     model.save(path)

    Raises:
        FileNotFoundError: the block succeeded but wrote nothing at the path.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.stem}.tmp-{secrets.token_hex(4)}{target.suffix}")
    try:
        yield temporary
        if not temporary.exists():
            raise FileNotFoundError(f"Nothing was written to {str(temporary)!r}.")
        _replace(temporary, target)
    finally:
        _remove(temporary)


def write_bytes(path: str | os.PathLike, content: bytes) -> Path:
    """Write `content` to `path` through `atomic_path`; returns the path."""
    with atomic_path(path) as temporary:
        temporary.write_bytes(content)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` as UTF-8 through `atomic_path`; returns the path."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return Path(path)


def copy(source: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Copy a file or a directory tree to `target` through `atomic_path`; returns it."""
    source = Path(source)
    with atomic_path(target) as temporary:
        if source.is_dir():
            shutil.copytree(source, temporary)
        else:
            shutil.copyfile(source, temporary)
    return Path(target)


def _replace(source: Path, target: Path) -> None:
    """Rename `source` onto `target`; a directory target is swapped out, then removed."""
    if target.is_dir() and not target.is_symlink():
        old = target.with_name(f".{target.name}.old-{secrets.token_hex(4)}")
        os.replace(target, old)
        os.replace(source, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(source, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


__all__ = ["atomic_path", "copy", "write_bytes", "write_text"]
