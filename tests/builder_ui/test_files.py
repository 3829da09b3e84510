"""A file written through `builder_ui.files` is there whole or not at all, on a real disk."""

from __future__ import annotations

import pytest

from builder_ui import files


def leftovers(directory):
    """Everything but the targets: the temporary and set-aside names the writes used."""
    return sorted(path.name for path in directory.iterdir() if path.name.startswith("."))


def test_a_file_replaces_the_old_one_and_keeps_its_suffix_while_written(tmp_path):
    target = tmp_path / "new" / "model.keras"
    with files.atomic_path(target) as temporary:
        assert temporary.parent == target.parent and temporary.suffix == ".keras"
        assert not target.exists()  # nothing at the target until the block succeeds
        temporary.write_text("one")
    assert target.read_text() == "one"
    files.write_text(target, "two")
    assert target.read_text() == "two"
    assert leftovers(target.parent) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = files.write_bytes(tmp_path / "table.csv", b"old")
    with pytest.raises(RuntimeError, match="disk full"):
        with files.atomic_path(target) as temporary:
            temporary.write_bytes(b"half of the ne")
            raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_block_that_writes_nothing_is_an_error_and_changes_nothing(tmp_path):
    target = files.write_text(tmp_path / "report.md", "kept")
    with pytest.raises(FileNotFoundError, match="Nothing was written"):
        with files.atomic_path(target):
            pass
    assert target.read_text() == "kept"


def test_a_directory_is_swapped_in_whole_and_the_old_one_removed(tmp_path):
    source = tmp_path / "source"
    (source / "variables").mkdir(parents=True)
    (source / "saved_model.pb").write_bytes(b"graph")
    (source / "variables" / "data").write_bytes(b"weights")
    target = tmp_path / "out" / "savedmodel"
    (target / "stale").mkdir(parents=True)
    (target / "stale" / "file").write_text("from an earlier export")
    files.copy(source, target)
    found = sorted(p.relative_to(target).as_posix() for p in target.rglob("*"))
    assert found == ["saved_model.pb", "variables", "variables/data"]
    assert leftovers(target.parent) == []


def test_a_failed_directory_write_leaves_the_old_directory(tmp_path):
    target = tmp_path / "checkpoint"
    target.mkdir()
    (target / "weights").write_bytes(b"epoch 3")
    with pytest.raises(OSError):
        with files.atomic_path(target) as temporary:
            temporary.mkdir()
            (temporary / "weights").write_bytes(b"epoch 4, half")
            raise OSError("interrupted")
    assert (target / "weights").read_bytes() == b"epoch 3"
    assert leftovers(tmp_path) == []


def test_copying_a_file_leaves_its_source(tmp_path):
    source = files.write_text(tmp_path / "data.csv", "x,y\n1,2\n")
    copied = files.copy(source, tmp_path / "uploads" / "data.csv")
    assert copied.read_text() == source.read_text() == "x,y\n1,2\n"
