"""The storage URI remote trials send their files through (`builder_ui.engine.transfer`).

Real pyarrow file systems: `file://` URIs and plain absolute paths on this machine (an
`s3://` bucket goes through the same `pyarrow.fs` calls; none is reachable from a test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builder_ui.engine import transfer

pytest.importorskip("pyarrow")

FILES = {"model.keras": b"\x00weights\xff", "logs/train/events": b"e" * 1000}


def _everything(root: Path):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_a_shipment_under_a_uri_round_trips_and_is_deleted_once_released(tmp_path):
    uri = transfer.check((tmp_path / "bucket").as_uri())
    payload = transfer.ship(FILES, uri, "run-1", "epoch-3")
    # The payload names the files; their bytes are under the URI, not in the message.
    assert payload["names"] == sorted(FILES) and "files" not in payload
    assert (tmp_path / "bucket" / "run-1" / "epoch-3" / "logs" / "train" / "events").read_bytes()
    assert transfer.receive(payload, uri=uri) == FILES
    transfer.release(payload)
    assert _everything(tmp_path / "bucket") == ["run-1"]
    transfer.release_run(uri, "run-1")
    assert _everything(tmp_path / "bucket") == []
    transfer.release_run(uri, "run-1")  # nothing left: no error


def test_without_a_uri_the_files_travel_by_value():
    payload = transfer.ship(FILES, None, "run-1", "result")
    assert payload == {"files": FILES}
    assert transfer.receive(payload, uri=None) == FILES
    transfer.release(payload)
    transfer.release_run(None, "run-1")


def test_a_plain_absolute_path_is_a_local_directory(tmp_path):
    uri = transfer.check(str(tmp_path / "shared"))
    transfer.ship(FILES, uri, "run-2", "result")
    assert (tmp_path / "shared" / "run-2" / "result" / "model.keras").read_bytes() == FILES[
        "model.keras"
    ]


def test_the_probe_leaves_nothing_behind(tmp_path):
    (tmp_path / "bucket").mkdir()
    (tmp_path / "bucket" / "keep.txt").write_text("a user's file")
    transfer.check((tmp_path / "bucket").as_uri())
    assert _everything(tmp_path / "bucket") == ["keep.txt"]
    assert transfer.check(None) is None


@pytest.mark.parametrize(
    "uri, says",
    [
        ("relative/dir", "absolute path"),
        ("", "non-empty URI"),
        ("nope://bucket/x", "pyarrow cannot open"),
    ],
)
def test_a_uri_that_cannot_be_used_is_refused_naming_it(uri, says):
    with pytest.raises(transfer.StorageError, match="storage") as raised:
        transfer.check(uri)
    assert says in str(raised.value) and repr(uri) in str(raised.value)


def test_a_uri_under_a_file_is_refused_and_the_file_kept(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(transfer.StorageError, match="cannot write under"):
        transfer.check((blocker / "runs").as_uri())
    assert blocker.read_text() == "not a directory"


def test_keys_that_would_leave_the_run_directory_are_refused(tmp_path):
    uri = transfer.check((tmp_path / "bucket").as_uri())
    for run_id, key in (("../escape", "result"), ("run", "../../x"), ("run", "")):
        with pytest.raises(ValueError, match="not a storage path segment"):
            transfer.ship(FILES, uri, run_id, key)
    assert _everything(tmp_path / "bucket") == []


@pytest.mark.parametrize(
    "name", ["../../etc/shadow", "/etc/shadow", "a/../../b", "", "a//b", "a/./b", "a\0b"]
)
def test_a_payload_naming_a_file_outside_its_folder_is_refused_before_anything_is_read(
    tmp_path, name
):
    uri = transfer.check((tmp_path / "bucket").as_uri())
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "shadow").write_text("secret")
    by_uri = {"uri": uri, "run_id": "run-1", "key": "result", "names": [name]}
    for payload in (by_uri, {"files": {name: b"x"}}):
        with pytest.raises(ValueError, match="not a plain relative path"):
            transfer.receive(payload, uri=uri)


def test_a_payload_under_another_storage_than_the_sweeps_is_refused(tmp_path):
    uri = transfer.check((tmp_path / "bucket").as_uri())
    other = transfer.check((tmp_path / "elsewhere").as_uri())
    payload = transfer.ship(FILES, other, "run-1", "result")
    for expected in (uri, None):
        with pytest.raises(ValueError, match="not the sweep's storage"):
            transfer.receive(payload, uri=expected)
