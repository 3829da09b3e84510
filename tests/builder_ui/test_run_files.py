"""A run's files read back from a store: only inside the run's own folder (issue 42).

A store is a folder a user may copy in, receive or find damaged, and a run record names
its files (`artifacts`: name -> path relative to the store). Records written here through
SQLite, as such a store would hold them, name a server file (`/etc/shadow`), climb out
(`../../…`) or link out of the run's folder; export (the library, `keras-seq export` and
the app's Export tab) and the app's BLEU table must refuse them, naming the run and the
field, and read, copy and write nothing.

A model file (`.keras`, a zip) is bounded before Keras reads it: a small file whose
config.json inflates to hundreds of megabytes, one of thousands of entries, one whose zip
directory understates a size, and a garbage file are each refused with one line.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile

import pytest

from builder_ui import cli
from builder_ui.app import actions
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from tests.allocation import allocates_little
from tests.app.compare_runs import full_spec, record_run

SECRET = "the server's own secret\n"


def _set_artifacts(directory, run_id: str, recorded: dict[str, str]) -> None:
    """Write a run's `artifacts` column as a hostile or damaged store holds it."""
    with sqlite3.connect(directory / "runs.sqlite") as connection:
        connection.execute(
            "UPDATE runs SET artifacts = ? WHERE id = ?", (json.dumps(recorded), run_id)
        )
    connection.close()


@pytest.fixture
def secret(tmp_path):
    """A file outside the store, standing for /etc/shadow."""
    path = tmp_path / "outside" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET, encoding="utf-8")
    return path


def _hostile_records(directory, secret):
    """A finished run per way out of its folder: absolute, `..`, a symbolic link."""
    with RunStore(directory) as store:
        ids = {
            way: record_run(store, "seq2seq", 0.5)
            for way in ("absolute", "dotdot", "symlink", "linked_folder")
        }
        store.artifact_dir(ids["symlink"]).mkdir(parents=True)
        (store.artifact_dir(ids["symlink"]) / "model.keras").symlink_to(secret)
        # The run's folder itself a link to another folder.
        store.artifact_dir(ids["linked_folder"]).symlink_to(secret.parent)
    # As `../../../../../etc/passwd` climbs out of a store at any depth.
    climb = "/".join([".."] * len(directory.parts)) + str(secret)
    recorded = {
        "absolute": str(secret),
        "dotdot": climb,
        "symlink": f"{ids['symlink']}/model.keras",
        "linked_folder": f"{ids['linked_folder']}/shadow",
    }
    for way, run_id in ids.items():
        _set_artifacts(
            directory,
            run_id,
            {"model.keras": recorded[way], "bleu_by_length.csv": recorded[way]},
        )
    return ids


WAYS = ("absolute", "dotdot", "symlink", "linked_folder")


@pytest.mark.parametrize("way", WAYS)
def test_an_artifact_outside_the_runs_folder_is_refused_naming_the_run_and_field(
    tmp_path, secret, way
):
    directory = tmp_path / "runs"
    run_id = _hostile_records(directory, secret)[way]
    with RunStore(directory) as store:
        with pytest.raises(artifacts.ArtifactError) as caught:
            artifacts.artifact_path(store, run_id, "model.keras")
        message = str(caught.value)
        assert f"Run {run_id!r}" in message and "artifacts['model.keras']" in message
        assert "outside the run's folder" in message
        with pytest.raises(export.ExportError, match=r"artifacts\['model\.keras'\]"):
            export.export(store, run_id, "keras", out=tmp_path / "x.keras")
    assert not (tmp_path / "x.keras").exists()


@pytest.mark.parametrize("way", WAYS)
def test_keras_seq_export_refuses_a_path_out_of_the_run_with_exit_2_and_copies_nothing(
    tmp_path, secret, way, capsys
):
    directory = tmp_path / "runs"
    run_id = _hostile_records(directory, secret)[way]
    out = tmp_path / "x.keras"
    argv = ["export", run_id, "--format", "keras", "--out", str(out), "--runs", str(directory)]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert run_id in line and "artifacts['model.keras']" in line and "Traceback" not in line
    assert SECRET.strip() not in captured.out + captured.err
    assert not out.exists()
    assert secret.read_text(encoding="utf-8") == SECRET


@pytest.mark.parametrize("way", WAYS)
def test_the_apps_export_and_bleu_table_refuse_a_path_out_of_the_run(tmp_path, secret, way):
    directory = tmp_path / "runs"
    run_id = _hostile_records(directory, secret)[way]
    ctx = actions.AppContext(directory, slots=["CPU"])
    try:
        with pytest.raises(actions.AppError, match=r"artifacts\['model\.keras'\]"):
            actions.export_run(ctx, run_id, "keras")
        with pytest.raises(actions.AppError, match=r"artifacts\['bleu_by_length\.csv'\]"):
            actions.bleu_table(ctx, run_id)
        served = [p for p in ctx.scratch.rglob("*") if p.is_file()]
        assert served == []  # no download made
    finally:
        ctx.close()


def test_an_artifact_inside_the_runs_folder_is_read(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        run_id = record_run(store, "seq2seq", 0.5)
        with store.atomic_artifact(run_id, "export/model.py") as path:
            path.write_text("# a script\n", encoding="utf-8")
        assert artifacts.artifact_path(store, run_id, "model.py") == (
            store.directory / run_id / "export" / "model.py"
        )
        with pytest.raises(artifacts.ArtifactError, match=r"has no artifact 'model\.keras'"):
            artifacts.artifact_path(store, run_id, "model.keras")


# --- a model file is bounded before Keras reads it ----------------------------------------------

MIB = 2**20


def _write_archive(path, members) -> None:
    """A zip of `members` (name -> bytes, or an iterable of chunks streamed in), deflated."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                for chunk in [content] if isinstance(content, bytes) else content:
                    member.write(chunk)


def _config_bomb(path) -> None:
    """A 0.3 MB `.keras` whose config.json inflates to 300 MiB (one JSON string of spaces)."""
    spaces = b" " * MIB
    body = (spaces for _ in range(300))
    _write_archive(path, {"config.json": _chained(b'{"a": "', body, b'"}'), "metadata.json": b"{}"})


def _chained(*parts):
    for part in parts:
        yield from [part] if isinstance(part, bytes) else part


def _run_with_model(directory, write) -> str:
    """A finished run whose model.keras `write(path)` writes."""
    with RunStore(directory) as store:
        run_id = record_run(store, "sequence_classifier", 0.5)
        with store.atomic_artifact(run_id, "model.keras") as path:
            write(path)
    return run_id


def test_a_model_whose_config_inflates_past_the_bound_is_refused_before_it_is_read(
    tmp_path, capsys
):
    directory = tmp_path / "runs"
    run_id = _run_with_model(directory, _config_bomb)
    with RunStore(directory) as store:
        assert artifacts.artifact_path(store, run_id, "model.keras").stat().st_size < MIB
        with allocates_little(), pytest.raises(export.ExportError) as caught:
            export.load_trained_model(store, run_id)
    message = str(caught.value)
    assert f"Run {run_id!r}" in message and "model.keras" in message
    assert "'config.json' unpacks to 315 MB" in message and "67.1 MB" in message
    argv = ["export", run_id, "--format", "python", "--runs", str(directory)]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "'config.json' unpacks to" in line and "Traceback" not in line
    assert not (directory / run_id / "export").exists()  # nothing written


def test_the_apps_inspect_refuses_a_model_bomb_with_one_line(tmp_path):
    directory = tmp_path / "runs"
    run_id = _run_with_model(directory, _config_bomb)
    ctx = actions.AppContext(directory, slots=["CPU"])
    try:
        with allocates_little(), pytest.raises(actions.AppError, match="unpacks to 315 MB"):
            ctx.model(run_id)
    finally:
        ctx.close()


def _entries(path) -> None:
    _write_archive(path, {f"assets/{i}.txt": b"" for i in range(artifacts.MAX_MODEL_ENTRIES + 1)})


def _lying(path) -> None:
    """config.json declares 100 bytes in the zip's directory, and inflates to 100 MiB."""
    spaces = b" " * MIB
    _write_archive(path, {"config.json": _chained(b"{", (spaces for _ in range(100)), b"}")})
    data = bytearray(path.read_bytes())
    central = data.rindex(b"PK\x01\x02")  # config.json's central directory record
    assert int.from_bytes(data[central + 24 : central + 28], "little") == 100 * MIB + 2
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")  # its uncompressed size
    path.write_bytes(bytes(data))


def _garbage(path) -> None:
    path.write_bytes(b"garbage" * 100)


@pytest.mark.parametrize(
    ("write", "said"),
    [
        (_entries, "holds 4,097 entries, more than the 4,096"),
        (_lying, "'config.json' unpacks to more than the 100 bytes its zip entry declares"),
        (_garbage, "is not a Keras model file (a zip archive): File is not a zip file"),
    ],
    ids=["entries", "lying", "garbage"],
)
def test_a_damaged_or_hostile_model_file_is_refused_with_one_line(tmp_path, capsys, write, said):
    directory = tmp_path / "runs"
    run_id = _run_with_model(directory, write)
    with RunStore(directory) as store:
        with allocates_little(), pytest.raises(export.ExportError) as caught:
            export.load_trained_model(store, run_id)
    assert said in str(caught.value) and f"Run {run_id!r}" in str(caught.value)
    assert "File not found" not in str(caught.value)
    assert cli.main(["export", run_id, "--format", "python", "--runs", str(directory)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert said in line


def test_a_model_file_over_the_total_bound_is_refused(tmp_path, monkeypatch):
    directory = tmp_path / "runs"
    stored = {"config.json": b"{}", "model.weights.h5": b"\0" * (2 * MIB)}
    run_id = _run_with_model(directory, lambda path: _write_archive(path, stored))
    monkeypatch.setattr(artifacts, "MAX_MODEL_BYTES", MIB)  # 4 GiB would take long to write
    with RunStore(directory) as store, pytest.raises(export.ExportError) as caught:
        export.load_trained_model(store, run_id)
    assert "unpacks to 2.1 MB in all, more than the 1.0 MB" in str(caught.value)


# --- the checkpoint log that `keras-seq resume` prints --------------------------------------------


def test_resume_refuses_a_checkpoint_log_that_links_out_of_the_run_and_prints_nothing_of_it(
    tmp_path, secret, capsys
):
    directory = tmp_path / "runs"
    with RunStore(directory) as store:
        run_id = store.create_run(full_spec("sequence_classifier"))
        store.set_status(run_id, "running")
        store.finish(run_id, "interrupted", error="stopped")
        store.artifact_dir(run_id).mkdir(parents=True)
        (store.artifact_dir(run_id) / "checkpoint.log").symlink_to(secret)
    assert cli.main(["resume", run_id, "--runs", str(directory)]) == 2
    captured = capsys.readouterr()
    assert SECRET.strip() not in captured.out + captured.err
    (line,) = captured.err.strip().splitlines()
    assert run_id in line and "checkpoint.log" in line and "outside the run's folder" in line
    with RunStore(directory) as store:
        assert store.get(run_id).status == "interrupted"  # not resumed


def test_a_checkpoint_note_replaces_a_log_that_links_out_of_the_run_and_copies_nothing_of_it(
    tmp_path, secret
):
    from builder_ui.engine import train

    with RunStore(tmp_path / "runs") as store:
        run_id = store.create_run(full_spec("sequence_classifier"))
        store.artifact_dir(run_id).mkdir(parents=True)
        log = store.artifact_dir(run_id) / "checkpoint.log"
        log.symlink_to(secret)
        train._note(store, run_id, "the newest checkpoint is damaged")
        assert not log.is_symlink()
        (line,) = log.read_text(encoding="utf-8").splitlines()
    assert line.endswith(f"run {run_id}: checkpoint: the newest checkpoint is damaged.")
    assert secret.read_text(encoding="utf-8") == SECRET  # the file it linked to untouched


def test_a_checkpoint_note_keeps_the_end_of_a_long_log(tmp_path, monkeypatch):
    from builder_ui.engine import train

    monkeypatch.setattr(train, "CHECKPOINT_LOG_BYTES", 100)
    with RunStore(tmp_path / "runs") as store:
        run_id = store.create_run(full_spec("sequence_classifier"))
        store.artifact_dir(run_id).mkdir(parents=True)
        log = store.artifact_dir(run_id) / "checkpoint.log"
        log.write_text("old\n" * 1000 + "the last old line\n", encoding="utf-8")
        train._note(store, run_id, "new")
        text = log.read_text(encoding="utf-8")
    assert len(text) < 200  # the last 100 bytes of the old log and the new line
    assert text.splitlines()[-2:] == ["the last old line", text.splitlines()[-1]]
    assert text.endswith("checkpoint: new.\n")
