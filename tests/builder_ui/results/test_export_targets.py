"""Where `export(out=...)` may write: never to or beside a device, a pipe or a socket (issue 42).

`keras-seq export RUN --format keras --out /dev/null --force` gave `/dev/null` the suffix
`.keras` and wrote `/dev/null.keras`. A run with a `model.keras` is recorded here without
training (the `keras` format copies the file as it is).
"""

from __future__ import annotations

import os

import pytest

from builder_ui import cli
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from tests.app.compare_runs import record_run


@pytest.fixture
def finished(tmp_path):
    """A store with one finished run whose model.keras holds a few bytes."""
    directory = tmp_path / "runs"
    with RunStore(directory) as store:
        run_id = record_run(store, "sequence_classifier", 0.5)
        with store.atomic_artifact(run_id, "model.keras") as path:
            path.write_bytes(b"a model")
    return directory, run_id


def _pipe(tmp_path, name):
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("name", ["pipe", "pipe.keras"])
@pytest.mark.parametrize("force", [False, True])
def test_a_named_pipe_as_out_is_refused_and_nothing_is_written_beside_it(
    finished, tmp_path, name, force
):
    directory, run_id = finished
    pipe = _pipe(tmp_path, name)
    with RunStore(directory) as store, pytest.raises(export.ExportError) as caught:
        export.export(store, run_id, "keras", out=pipe, force=force)
    assert str(caught.value) == (
        f"out: {str(pipe)!r} is a named pipe, not a regular file or a folder; give a file path "
        "(an export is never written to or beside it)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["runs", name])


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="a POSIX /dev/null")
def test_export_out_dev_null_force_exits_2_and_writes_nothing_in_dev(finished, capsys):
    directory, run_id = finished
    before = set(os.listdir("/dev"))
    argv = ["export", run_id, "--format", "keras", "--out", "/dev/null", "--force"]
    assert cli.main([*argv, "--runs", str(directory)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "out: '/dev/null' is a character device, not a regular file" in line
    assert set(os.listdir("/dev")) == before
    assert not os.path.exists("/dev/null.keras")


def test_a_regular_file_and_a_folder_are_still_export_targets(finished, tmp_path):
    directory, run_id = finished
    with RunStore(directory) as store:
        assert export.export(store, run_id, "keras", out=tmp_path / "m").read_bytes() == (
            b"a model"
        )
        (tmp_path / "folder").mkdir()
        assert export.export(store, run_id, "keras", out=tmp_path / "folder").name == (
            "model.keras"
        )
