"""A run's files read back from a store: only inside the run's own folder (issue 42).

A store is a folder a user may copy in, receive or find damaged, and a run record names
its files (`artifacts`: name -> path relative to the store). Records written here through
SQLite, as such a store would hold them, name a server file (`/etc/shadow`), climb out
(`../../…`) or link out of the run's folder; export (the library, `keras-seq export` and
the app's Export tab) and the app's BLEU table must refuse them, naming the run and the
field, and read, copy and write nothing.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from builder_ui import cli
from builder_ui.app import actions
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from tests.app.compare_runs import record_run

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
