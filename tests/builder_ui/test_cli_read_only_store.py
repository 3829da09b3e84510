"""A run store on a read-only file system (issue 42): it is read, and a change is refused.

Root writes through any file mode, so `chmod` would not make the store read-only here; the
commands run in a mount namespace (`unshare --mount`) where the store's directory is bound
read-only, as a read-only mount or a snapshot would be, in one fresh interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from builder_ui.engine.store import RunStore
from tests.builder_ui.test_cli_engine import TINY as SPEC

# Runs each argv with `cli.main` and prints their exit codes, stdout and stderr as JSON.
DRIVER = """
import contextlib, io, json, sys
from builder_ui import cli
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    results.append([code, out.getvalue(), err.getvalue()])
print("RESULTS", json.dumps(results))
"""

# Opens the store, writes a run and dies without closing it: its -wal and -shm files stay.
KILLED_WRITER = """
import os, sys
from builder_ui.engine.store import RunStore
RunStore(sys.argv[1]).create_run({"name": "left"}, name="left by a killed writer")
os._exit(0)
"""


def in_read_only_mount(directory, argvs, *, driver=DRIVER, argv=None):
    """`[(code, stdout, stderr), ...]` of each argv, run where `directory` is mounted read-only
    (or what another `driver` prints after "RESULTS ", given `argv`)."""
    if shutil.which("unshare") is None:
        pytest.skip("no `unshare` to make a read-only mount with")
    mount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    driver = [sys.executable, "-c", driver, *(argv if argv is not None else [json.dumps(argvs)])]
    result = subprocess.run(
        ["unshare", "--mount", *user, "sh", "-c", mount, str(directory), *driver],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULTS ")]
    if not lines and "mount" in result.stderr and result.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {result.stderr.strip()}")
    assert lines, result.stderr[-3000:]
    found = json.loads(lines[-1].removeprefix("RESULTS "))
    return found if argv is None else [found]


@pytest.mark.large
@pytest.mark.parametrize("left", ["closed", "left open by a killed writer"])
def test_a_read_only_store_is_read_and_every_change_is_refused_naming_it(tmp_path, left):
    runs = tmp_path / "runs"
    with RunStore(runs) as store:
        done = store.create_run(SPEC, name="done", status="running")
        with store.atomic_artifact(done, "model.keras") as path:
            path.write_bytes(b"a model")
        store.finish(done, "done", metrics={"accuracy": 0.5})
        stopped = store.create_run(SPEC, name="stopped", status="running")
        store.set_status(stopped, "interrupted", error="stopped")
    if left != "closed":
        subprocess.run([sys.executable, "-c", KILLED_WRITER, str(runs)], check=True)
        assert (runs / "runs.sqlite-wal").stat().st_size > 0
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    out = tmp_path / "out" / "model.keras"
    on_runs = ["--runs", str(runs)]
    reads = [
        ["runs", *on_runs],
        ["runs", *on_runs, "--compare", done, stopped],
        ["export", done, "--format", "keras", "--out", str(out), *on_runs],
    ]
    writes = [
        ["runs", *on_runs, "--star", done],
        ["runs", *on_runs, "--delete", done, "--yes"],
        ["train", str(spec), *on_runs],
        ["resume", stopped, *on_runs],
    ]
    results = in_read_only_mount(runs, reads + writes)

    for argv, (code, _, stderr) in zip(reads, results, strict=False):
        assert (code, stderr) == (0, ""), argv
    listed = [line.split()[2] for line in results[0][1].splitlines()[1:]]
    assert listed[:2] == ["done", "interrupted"]
    assert out.read_bytes() == b"a model"
    for argv, (code, _, stderr) in zip(writes, results[len(reads) :], strict=True):
        assert code == 2, (argv, stderr)
        assert stderr == (
            f"keras-seq {argv[0]}: error: the run store {str(runs)!r} is read-only (on a "
            "read-only file system): it can be read, not changed; nothing was written: copy "
            "it to a directory you may write to, or make it writable, to change it\n"
        ), argv
    with RunStore(runs) as store:
        assert not store.get(done).starred
        assert [record.status for record in store.list_runs()][:2] == ["done", "interrupted"]


@pytest.mark.large
def test_a_read_only_store_exports_to_out_through_a_scratch_folder_and_writes_nothing_in_it(
    tmp_path,
):
    from builder_ui.engine import run

    runs = tmp_path / "runs"
    with RunStore(runs) as store:
        done = run(SPEC, store=store).id
    before = sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*"))
    on_runs = ["--runs", str(runs)]
    script, saved = tmp_path / "out" / "model.py", tmp_path / "out" / "saved"
    argvs = [
        ["export", done, "--format", "python", "--out", str(script), *on_runs],
        ["export", done, "--format", "savedmodel", "--out", str(saved), *on_runs],
        ["export", done, "--format", "python", *on_runs],
    ]
    results = in_read_only_mount(runs, argvs)

    for argv, (code, _, stderr) in zip(argvs[:2], results, strict=False):
        assert (code, stderr) == (0, ""), argv
    assert "keras" in script.read_text(encoding="utf-8")
    assert (saved / "saved_model.pb").is_file()
    code, _, stderr = results[2]
    assert code == 2 and stderr == (
        f"keras-seq export: error: The run store {str(runs)!r} is read-only (on a read-only "
        f"file system), so the 'python' export cannot be kept in run {done!r}'s folder: give "
        "out (--out) to write it elsewhere\n"
    )
    assert sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*")) == before


# The app's Export tab on a read-only store: its action, in an AppContext opened there.
APP_EXPORT = """
import json, sys, zipfile
from builder_ui.app import actions
ctx = actions.AppContext(sys.argv[1], slots=["CPU"])
found = {}
try:
    for fmt in ("python", "savedmodel"):
        exported = actions.export_run(ctx, sys.argv[2], fmt)
        path = exported.path
        found[fmt] = (
            sorted(zipfile.ZipFile(path).namelist())[:3] if fmt == "savedmodel"
            else path.read_text()
        )
finally:
    ctx.close()
print("RESULTS", json.dumps(found))
"""


@pytest.mark.large
def test_the_apps_export_of_a_read_only_store_gives_each_download(tmp_path):
    from builder_ui.engine import run

    runs = tmp_path / "runs"
    with RunStore(runs) as store:
        done = run(SPEC, store=store).id
    before = sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*"))
    [found] = in_read_only_mount(runs, [done], driver=APP_EXPORT, argv=[str(runs), done])

    assert "def build_model" in found["python"]
    assert found["savedmodel"][0].startswith("savedmodel/")
    assert sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*")) == before
