"""End to end through the API: `keras-seq ui` in a subprocess, driven by `gradio_client`.

The app of the test process (`server` in `tests/app/conftest.py`: a real `keras-seq ui`
process on a free loopback port, shared with the browser tests): the client builds a small
model, trains it for one epoch, reads the results table, downloads the exports and the CSV,
and sends bad input that must be refused with a message and store nothing. A second server
(started with `--no-warm-up`: it never trains) checks authentication and a clean stop on
SIGTERM.
"""

from __future__ import annotations

import csv
import http.cookiejar
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from builder_ui.engine.store import RunStore
from builder_ui.lab.runner import LAB_DIR
from tests.app.app_server import Server, get, listening_addresses
from tests.builder_ui.lab.quick_experiment_one import check_the_report_of_quick_experiment_one

pytestmark = pytest.mark.large

# The bound on 2 cores; the app imports neither Keras nor TensorFlow to start.
TRAIN_TIMEOUT_S = 120

# 96 training and 24 validation sequences of 5 one-hot steps, one epoch: about a second.
TINY_FIELDS = [
    ("task.lag", "5"),
    ("task.n", "120"),
    ("task.num_distractors", "3"),
    ("model.encoder.units", "4"),
    ("train.epochs", "1"),
    ("train.batch_size", "32"),
]


@pytest.fixture(scope="module")
def client(server):
    from gradio_client import Client

    return Client(server.url, verbose=False, download_files=str(server.runs.parent / "client"))


def table_rows(table: dict) -> list[dict]:
    """A Dataframe output as a list of `{header: cell}`."""
    return [dict(zip(table["headers"], row, strict=True)) for row in table["data"]]


def tiny_spec(client) -> str:
    text = client.predict("vanilla_rnn", api_name="/load_preset")[0]
    for path, value in TINY_FIELDS:
        text, errors, *_ = client.predict(text, path, value, api_name="/set_field")
    assert "Valid spec" in errors, errors
    return text


def wait_for_status(client, run_id: str, wanted: str = "done") -> dict:
    deadline = time.monotonic() + TRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        table, *_ = client.predict("", [], [], api_name="/results")
        rows = {row["id"]: row for row in table_rows(table)}
        if run_id in rows and rows[run_id]["status"] in (wanted, "failed", "diverged", "cancelled"):
            return rows[run_id]
        time.sleep(0.5)
    pytest.fail(f"run {run_id} did not end within {TRAIN_TIMEOUT_S} s")


@pytest.fixture(scope="module")
def trained(client, server):
    """Build and queue the tiny spec through the API; wait until it is done."""
    text = tiny_spec(client)
    message, *_ = client.predict(text, api_name="/queue")
    assert message.startswith("✓ Queued run "), message
    run_id = message.split()[3]
    row = wait_for_status(client, run_id)
    return run_id, row


def test_the_server_listens_on_loopback_only_and_serves_no_other_files(server):
    status, page = get(server.url + "/")
    assert status == 200 and "<html" in page.lower()
    status, body = get(server.url + "/config")
    config = json.loads(body)
    assert config["title"] == "keras_seq builder"
    if os.path.exists("/proc/net/tcp"):
        assert listening_addresses(server.port) == {"0100007F"}  # 127.0.0.1 only
    # Only files the app returned are served: not the store's folder, not the system's.
    secret_in_store = server.runs / "private-notes.txt"  # the store itself appears at its 1st run
    secret_in_store.parent.mkdir(parents=True, exist_ok=True)
    secret_in_store.write_text("not for the web", encoding="utf-8")
    for secret in (secret_in_store, Path("/etc/passwd")):
        assert secret.exists()
        status, _ = get(f"{server.url}/gradio_api/file={secret}")
        assert status in (403, 404), status


def test_every_event_has_an_explicit_api_name(server):
    _, body = get(server.url + "/config")
    dependencies = json.loads(body)["dependencies"]
    names = [d.get("api_name") for d in dependencies]
    assert all(isinstance(name, str) and name for name in names), names
    assert {"load_preset", "set_field", "summarize", "queue", "cancel", "poll", "results"} <= set(
        names
    )
    assert {"results_csv", "compare_curves", "bleu_by_length", "predict", "export"} <= set(names)


def test_the_client_builds_a_model_and_reads_its_summary(client):
    text = tiny_spec(client)
    headline, table, diagram = client.predict(text, api_name="/summarize")
    rnn = 4 * 5 + 4 * 4 + 4  # SimpleRNN: W_x (5 symbols → 4), W_h, b
    head = 4 * 2 + 2
    assert f"**{rnn + head:,} parameters**" in headline
    assert [row["layer"] for row in table_rows(table)] == ["sequence", "simple_0", "classifier"]
    assert 'data-layer="simple_0"' in diagram


def test_a_run_trained_through_the_api_appears_in_the_results_with_its_metric(
    client, server, trained
):
    run_id, row = trained
    assert row["status"] == "done", row
    with RunStore(server.runs) as store:
        record = store.get(run_id)
    assert record.name == "vanilla-rnn" and record.epochs_done == 1
    assert row["val_accuracy"] == pytest.approx(record.metrics["accuracy"], rel=1e-3)
    assert row["params"] == record.params and row["device"] == "CPU"
    # The queue shows it finished, on the CPU, in float32.
    shown = client.predict(run_id, api_name="/poll")
    queue, bar = shown["queue"], shown["progress"]
    (queued,) = [r for r in table_rows(queue) if r["id"] == run_id]
    assert (queued["status"], queued["progress"], queued["precision"]) == (
        "done",
        "100%",
        "float32",
    )
    assert 'data-status="done"' in bar


def test_the_exports_and_the_csv_download_through_the_api(client, trained):
    run_id, _ = trained
    message, path, snippet = client.predict(run_id, "keras", api_name="/export")
    assert message == f"✓ `{run_id}.keras`"
    with zipfile.ZipFile(path) as archive:  # a .keras file is a zip archive
        assert "config.json" in archive.namelist()
    assert "safe_mode=True" in snippet

    _, path, snippet = client.predict(run_id, "savedmodel", api_name="/export")
    with zipfile.ZipFile(path) as archive:
        assert "savedmodel/saved_model.pb" in archive.namelist()
    assert "tf.saved_model.load" in snippet

    _, path, snippet = client.predict(run_id, "python", api_name="/export")
    assert "def build_model(" in Path(path).read_text()
    assert "build_model()" in snippet

    message, path = client.predict("", [], api_name="/results_csv")
    with open(path, newline="") as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    assert rows[run_id]["status"] == "done"


def test_a_run_cancelled_through_the_api_stops_with_status_cancelled(client, server, trained):
    text = tiny_spec(client)
    text, *_ = client.predict(text, "train.epochs", "1000", api_name="/set_field")
    message, *_ = client.predict(text, api_name="/queue")
    run_id = message.split()[3]
    deadline = time.monotonic() + TRAIN_TIMEOUT_S
    with RunStore(server.runs) as store:
        while store.get(run_id).epochs_done < 1:  # training, one epoch recorded
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
    message, *_ = client.predict(run_id, api_name="/cancel")
    assert message == f"■ Run {run_id} stops after its current batch (then: cancelled)."
    row = wait_for_status(client, run_id, "cancelled")
    assert row["status"] == "cancelled"
    with RunStore(server.runs) as store:
        record = store.get(run_id)
    assert 1 <= record.epochs_done < 1000 and record.error == "Cancelled; no model was saved."


def test_bad_input_is_refused_with_a_message_and_stores_nothing(client, server, trained, tmp_path):
    with RunStore(server.runs) as store:
        before = [record.id for record in store.list_runs()]
    text = tiny_spec(client)
    bad, errors, *_ = client.predict(text, "model.encoder.units", "-3", api_name="/set_field")
    assert "`model.encoder.units`: expected an integer ≥ 1, got -3" in errors
    message, *_ = client.predict(bad, api_name="/queue")
    assert message.startswith("**Nothing was queued.**") and "model.encoder.units" in message
    message, *_ = client.predict("version: 1\nname: [unclosed\n", api_name="/queue")
    assert "malformed YAML at line" in message

    from gradio_client import handle_file

    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,1,2\nb,3\n")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"a,1,2\nb,\xe9,2\n")
    status, *_ = client.predict(handle_file(str(ragged)), "labelled_sequences", api_name="/upload")
    assert status.startswith("✗ ragged.csv, line 2: ragged row")
    status, *_ = client.predict(handle_file(str(latin)), "labelled_sequences", api_name="/upload")
    assert status.startswith("✗ latin.csv, line 2: not UTF-8 text")
    message, *_ = client.predict("", "", 0, api_name="/predict")
    assert message == "✗ Choose a run first."

    with RunStore(server.runs) as store:
        assert [record.id for record in store.list_runs()] == before
    assert not (server.runs / "_uploads").exists()


def test_a_store_locked_by_another_writer_is_one_line_on_the_page_and_queues_nothing(tmp_path):
    """Another process holds the store's write lock: Queue waits `BUSY_TIMEOUT_S`, then the
    Train tab says so in one line (it raised `StoreLockedError` out of the event before)."""
    import sqlite3

    from gradio_client import Client

    from tests.app.compare_runs import record_run

    with RunStore(tmp_path / "runs") as store:  # a store with one finished run in it
        existing = record_run(store, "sequence_classifier", 0.5)
    running = Server(tmp_path, "--no-warm-up")  # its own store: the lock stops only it
    holder = None
    try:
        running.wait_until_up()
        client = Client(running.url, verbose=False)
        text = tiny_spec(client)
        holder = sqlite3.connect(running.runs / "runs.sqlite", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as a writer in another process
        message, *_ = client.predict(text, api_name="/queue")
        holder.execute("ROLLBACK")
    finally:
        if holder is not None:
            holder.close()
        code = running.stop()
    assert message.startswith(
        f"✗ the run store database {str(running.runs / 'runs.sqlite')!r} is locked by another "
        "writer"
    ), message
    assert message.endswith("nothing was written: try again when it is done"), message
    assert "Traceback" not in running.log() and code == 0
    with RunStore(running.runs) as store:
        assert [record.id for record in store.list_runs()] == [existing]


def test_with_auth_the_app_answers_only_after_login_and_stops_on_sigterm(tmp_path):
    running = Server(tmp_path, "--auth", "alice:s3cret", "--no-warm-up")
    try:
        running.wait_until_up()
        status, body = get(running.url + "/config")
        assert status == 401
        assert "keras_seq builder" not in body
        session = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        assert (
            get(running.url + "/login", {"username": "alice", "password": "no"}, session)[0] >= 400
        )
        assert get(running.url + "/config", opener=session)[0] == 401
        right = {"username": "alice", "password": "s3cret"}
        assert get(running.url + "/login", right, session)[0] == 200
        status, body = get(running.url + "/config", opener=session)
        assert status == 200 and "keras_seq builder" in body
    finally:
        code = running.stop()
    assert code == 0, running.log()  # SIGTERM closes the server cleanly
    assert "running on http://127.0.0.1:" in running.log()


@pytest.mark.large
def test_the_lab_list_runs_an_experiment_and_shows_its_figure(client, server):
    # A real child process (`keras-seq lab --only 1 --quick`) runs the quick lab's smallest
    # experiment (1, vanishing gradients: two gradient-flow measurements and two SimpleRNN
    # runs through the engine) into the app's store; its figure, finding and verdict show.
    status, *_ = client.predict(1, api_name="/lab_run")
    assert "running" in status
    status, *_ = client.predict(2, api_name="/lab_run")
    assert "Experiment 1 is still running" in status  # one experiment at a time
    deadline = time.monotonic() + 300
    while True:
        status, figure, finding, table, _timer = client.predict(1, api_name="/lab_poll")
        if "running" not in status or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert "finished" in status, status
    assert figure and Path(figure).read_bytes()[:4] == b"\x89PNG"
    assert "agrees" in finding
    (row,) = [row for row in table_rows(table) if row["#"] == 1]
    assert row["last verdict"] in ("agrees", "partly agrees", "does not agree")
    # What it left in the store's lab folder: the report, tables, results.json and the runs.
    check_the_report_of_quick_experiment_one(server.runs / LAB_DIR, server.runs)


def test_a_request_for_another_host_name_is_refused_dns_rebinding(server):
    # A page on evil.example whose name resolves to 127.0.0.1 sends its own Host header.
    request = urllib.request.Request(server.url + "/config", headers={"Host": "evil.example"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    assert status == 400
    status, body = get(server.url + "/config")
    assert status == 200 and "keras_seq builder" in body


def test_every_answer_carries_the_security_headers(server):
    with urllib.request.urlopen(server.url + "/", timeout=10) as response:
        headers = {name.lower(): value for name, value in response.getheaders()}
    assert headers["x-frame-options"] == "DENY"
    assert headers["content-security-policy"] == "frame-ancestors 'none'"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
