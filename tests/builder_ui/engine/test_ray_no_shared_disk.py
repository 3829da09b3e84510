"""A Ray sweep on a worker node that cannot see the driver's disk, with a worker killed mid-trial.

Two Ray nodes on this machine, as two machines would be: a head that runs no trial
(`--num-cpus 0`) and the driver, and a worker node started under `unshare --mount` with a
private, empty tmpfs mounted over the directory that holds the driver's run store and
the sweep's data file. Its processes can see neither (nor anything the driver writes
there later). A 4-trial sweep over a CSV task runs with `address=` the head; while it
runs, one trial's worker process is killed with SIGKILL once its first epoch is in the
driver's store.

What must hold: every epoch of the three other trials is in the driver's store and their
models load; the killed trial is `interrupted`, with the epochs it streamed, and
`resume_sweep` finishes it here from the checkpoint that came with them; the worker
node's view of the store's directory is empty afterwards, and its scratch directories
are gone. The same holds for a TPE+ASHA search on these nodes (its study in the driver), whose other
trials end `done` or `pruned`; that one sends its files through a storage URI (`--storage`,
a `file://` directory both nodes see, as a bucket would be) instead of Ray's object store,
and the URI is empty once the sweep has ended.

The two tests share the two nodes (a module fixture), each with a directory of its own under
the hidden one; the data are small (the claims are about where files go, not learning).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from builder_ui.engine import artifacts, executors, interrupts, remote
from builder_ui.engine.store import RunStore
from tests.builder_ui.engine.walks import write_walks

EPOCHS = 5
START_TIMEOUT_S = 120  # hang guards: each node starts in seconds
SWEEP_TIMEOUT_S = 600

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(sys.platform != "linux", reason="uses Linux mount namespaces"),
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None,
        reason="needs root and util-linux's unshare and nsenter for a private mount namespace",
    ),
]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray_command():
    return str(Path(sys.executable).parent / "ray")


def _sweep(data):
    return {
        "version": 2,
        "name": "remote",
        "task": {"type": "csv_sequences", "path": str(data), "inputs": "numeric"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "gru", "units": 8},
        },
        "train": {"epochs": EPOCHS, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
        "sweep": {"parameters": {"model.encoder.cell": ["gru", "lstm", "simple", "cec_lstm"]}},
    }


@pytest.fixture(scope="module")
def cluster():
    """A head node here and a worker node in a mount namespace that hides the driver's files.

    One pair of nodes for the module's tests; each test works in a directory of its own under
    `hidden` (`_hidden_dir`).
    """
    pytest.importorskip("ray")
    ray_temp_root = Path(tempfile.mkdtemp(prefix="ray", dir=tempfile.gettempdir()))  # short
    # Ray 2.5x's token authentication is made for real clusters; these nodes, all of them this
    # machine's and the test's own, go without (the driver joins with an explicit address).
    try:
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
            yield from _two_nodes(ray_temp_root)
    finally:
        shutil.rmtree(ray_temp_root, ignore_errors=True)


def _two_nodes(ray_temp_root):
    hidden = Path(tempfile.mkdtemp(prefix="kseq-driver-"))
    worker_tmp = Path(tempfile.mkdtemp(prefix="kseq-worker-"))
    port = _free_port()
    env = {
        **os.environ,
        "RAY_TMPDIR": str(ray_temp_root),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "KERAS_BACKEND": "tensorflow",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
    }
    env.pop("RAY_ADDRESS", None)
    common = ["--disable-usage-stats", "--block"]
    head = subprocess.Popen(
        [
            _ray_command(),
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=0",
            "--include-dashboard=false",
            "--node-ip-address=127.0.0.1",
            *common,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    _wait_for_port(port, head)
    # The worker node's own mount namespace: a private, empty tmpfs over the driver's directory.
    script = (
        f"mount --make-rprivate / && mount -t tmpfs -o size=16m kseq-hidden {hidden} && "
        f"exec {_ray_command()} start --address={address} --num-cpus=2 "
        f"--node-ip-address=127.0.0.1 {' '.join(common)}"
    )
    worker = subprocess.Popen(
        ["unshare", "--mount", "sh", "-c", script],
        env={**env, "TMPDIR": str(worker_tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for_the_hiding_mount(worker, hidden)
        yield {"address": address, "hidden": hidden, "worker": worker, "worker_tmp": worker_tmp}
    finally:
        for process in (worker, head):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=60)
        # Whatever the nodes started in sessions of their own (raylet, GCS, workers).
        subprocess.run(["pkill", "-9", "-f", str(ray_temp_root)], check=False)
        shutil.rmtree(hidden, ignore_errors=True)
        shutil.rmtree(worker_tmp, ignore_errors=True)


def _hidden_dir(cluster, request):
    """A directory of this test's own under the one the worker node cannot see."""
    directory = cluster["hidden"] / request.node.name
    directory.mkdir()
    return directory


def _scratch(cluster):
    return {p for p in cluster["worker_tmp"].iterdir() if p.name.startswith(remote.SCRATCH_PREFIX)}


def _wait_for_the_hiding_mount(worker, directory, timeout=60.0):
    """Return once the worker's mount namespace has its tmpfs over `directory`.

    `unshare` and the shell mount it only after `Popen` returns; a check made before that
    would look at this machine's own view. The mount point is field 5 of
    `/proc/<pid>/mountinfo` (the same pid: `unshare` and `sh` exec, they do not fork).
    The timeout is a hang guard.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise AssertionError(f"the worker node exited with {worker.returncode}")
        try:
            lines = Path(f"/proc/{worker.pid}/mountinfo").read_text().splitlines()
        except OSError:
            lines = []
        if any(line.split()[4] == str(directory) for line in lines if len(line.split()) > 4):
            return
        time.sleep(0.1)
    raise AssertionError(f"no tmpfs over {directory} in the worker's namespace after {timeout} s")


def _assert_the_worker_sees_nothing_in(directory, worker):
    """The worker node's view of `directory`, through its mount namespace: empty."""
    view = subprocess.run(
        ["nsenter", "--mount", f"--target={worker.pid}", "ls", "-A", str(directory)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert view.returncode == 0 and view.stdout.strip() == "", view


def _wait_for_port(port, process):
    """Wait until the head's GCS takes connections (the head still running)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the head node exited with {process.returncode}"
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    pytest.fail(f"the head node took no connection on port {port} within {START_TIMEOUT_S} s")


def _wait_for_two_nodes(ray):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        alive = [node for node in ray.nodes() if node["Alive"]]
        if len(alive) == 2 and ray.cluster_resources().get("CPU", 0) >= 2:
            return
        time.sleep(0.5)
    pytest.fail(f"the worker node did not join within {START_TIMEOUT_S} s: {ray.nodes()}")


def _trial_process(run_id):
    """The pid of the Ray worker process training `run_id`: the one with its scratch store open
    (a `run_trial` task)."""
    found = subprocess.run(["pgrep", "-f", "^ray::"], capture_output=True, text=True)
    for pid in found.stdout.split():
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue  # ended meanwhile
        for link in links:
            if (
                link.endswith(f"/{remote.STORE_DIR}/runs.sqlite")
                and (Path(link).parent / run_id).is_dir()
            ):
                return int(pid)
    return None


def _kill_one_trial_after_its_first_epoch(store_dir, killed, stop):
    """Poll the driver's store; SIGKILL the worker of the first running trial with an epoch."""
    with RunStore(store_dir) as store:
        while not stop.is_set():
            for record in store.list_runs(status="running", history=True):
                pid = _trial_process(record.id) if record.history else None
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(record.id)
                    return
            time.sleep(0.1)


def _sweep_killing_one_trial(cluster, document, store_dir, storage=None):
    """Run the sweep from this process (the driver) on the cluster, SIGKILLing one trial's
    worker after its first epoch; returns the driver's store, the result and the killed id."""
    import ray

    with interrupts.handlers_kept():  # ray.init installs a SIGTERM handler
        ray.init(address=cluster["address"], log_to_driver=False)
    try:
        _wait_for_two_nodes(ray)
        store = RunStore(store_dir)
        killed, stop = [], threading.Event()
        killer = threading.Thread(
            target=_kill_one_trial_after_its_first_epoch, args=(store_dir, killed, stop)
        )
        killer.start()
        try:
            result = executors.run_sweep(document, store=store, executor="ray", storage=storage)
        finally:
            stop.set()
            killer.join(timeout=SWEEP_TIMEOUT_S)
    finally:
        ray.shutdown()
    assert killed, "no trial was killed: the test did not test a lost worker"
    (killed_id,) = killed
    return store, result, killed_id


def test_a_sweep_on_a_node_without_the_drivers_disk(cluster, request):
    import keras

    hidden = _hidden_dir(cluster, request)
    store_dir = hidden / "runs"
    data = hidden / "walks.csv"
    write_walks(data, count=400, steps=20)
    # The worker node sees an empty tmpfs where the driver has its data file.
    _assert_the_worker_sees_nothing_in(cluster["hidden"], cluster["worker"])
    scratch_before = _scratch(cluster)

    store, result, killed = _sweep_killing_one_trial(cluster, _sweep(data), store_dir)
    records = store.list_runs(sweep_id=result.sweep_id, history=True)
    statuses = sorted(record.status for record in records)
    assert statuses == ["done", "done", "done", "interrupted"], [
        (r.status, r.error) for r in records
    ]
    for record in records:
        if record.status == "done":
            assert [row.epoch for row in record.history] == list(range(1, EPOCHS + 1))
            model = keras.saving.load_model(
                artifacts.artifact_path(store, record.id, "model.keras"), safe_mode=True
            )
            assert model.count_params() == record.params
            # Trained on the worker node from the shipped copy of the file.
            assert record.spec["task"]["path"] == str(data)
        else:
            interrupted = record
            assert killed == record.id
            assert "keras-seq resume" in interrupted.error and "was lost" in interrupted.error
            assert 1 <= len(interrupted.history) < EPOCHS
            assert (store.artifact_dir(interrupted.id) / "backup").is_dir()

    streamed = len(interrupted.history)
    resumed = executors.resume_sweep(store, result.sweep_id)
    final = {record.id: record for record in resumed.records}[interrupted.id]
    assert final.status == "done", final.error
    assert [row.epoch for row in final.history] == list(range(1, EPOCHS + 1))
    # The epochs streamed before the kill were kept, not trained again.
    assert [row.time for row in final.history[:streamed]] == [
        row.time for row in interrupted.history
    ]
    store.close()

    # Nothing of the store on the worker node: its view of the directory is still empty, and
    # the scratch directories are gone, but for the killed trial's if no trial started on the
    # node after it (the next one removes it: its process is dead).
    # (Scratch directories of an earlier test's sweep on these nodes are not this sweep's.)
    _assert_the_worker_sees_nothing_in(cluster["hidden"], cluster["worker"])
    scratch = sorted(_scratch(cluster) - scratch_before)
    assert all((p / remote.STORE_DIR / interrupted.id).is_dir() for p in scratch), scratch
    assert len(scratch) <= 1, scratch


def test_a_tpe_asha_search_on_a_node_without_the_drivers_disk(cluster, request):
    """The same set-up, a TPE and ASHA search: the study in the driver, the trials remote."""
    pytest.importorskip("optuna")
    import keras

    hidden = _hidden_dir(cluster, request)
    store_dir = hidden / "runs"
    data = hidden / "walks.csv"
    write_walks(data, count=400, steps=20)
    document = _sweep(data)
    document["sweep"] = {
        "method": "bayes",
        "num_trials": 4,
        "seed": 0,
        "metric": "val_loss",
        "parameters": {
            "model.encoder.cell": ["gru", "lstm", "simple", "cec_lstm"],
            "train.learning_rate": [0.01, 0.003],
        },
        "scheduler": {"type": "asha", "grace_period": 2, "reduction_factor": 2},
    }
    # Outside the hidden directory: both nodes see it, as both would reach a bucket.
    bucket = Path(tempfile.mkdtemp(prefix="kseq-bucket-"))
    try:
        store, result, killed = _sweep_killing_one_trial(
            cluster, document, store_dir, storage=bucket.as_uri()
        )
        # Every file that went through the URI was read into the store and deleted there.
        assert sorted(p.relative_to(bucket).as_posix() for p in bucket.rglob("*")) == []
    finally:
        shutil.rmtree(bucket, ignore_errors=True)
    records = store.list_runs(sweep_id=result.sweep_id, history=True)
    assert len(records) == 4, [(r.name, r.status) for r in records]
    by_status = {}
    for record in records:
        by_status.setdefault(record.status, []).append(record)
    assert set(by_status) <= {"done", "pruned", "interrupted"}, [
        (r.status, r.error) for r in records
    ]
    (interrupted,) = by_status["interrupted"]
    assert killed == interrupted.id
    assert 1 <= len(interrupted.history) < EPOCHS
    assert by_status.get("done"), "no trial completed"
    for record in by_status["done"]:
        assert [row.epoch for row in record.history] == list(range(1, EPOCHS + 1))
        model = keras.saving.load_model(
            artifacts.artifact_path(store, record.id, "model.keras"), safe_mode=True
        )
        assert model.count_params() == record.params
    for record in by_status.get("pruned", []):
        # Stopped at a rung (epoch 2, then 4), its epochs streamed into the driver's store.
        assert [row.epoch for row in record.history] in ([1, 2], [1, 2, 3, 4]), record.history
        assert not (store.artifact_dir(record.id) / "model.keras").exists()
    # The killed trial resumes here from the epochs it streamed, inside the search: the trials
    # that ended are replayed into a new study, so ASHA may stop it at a rung, as on Ray. The
    # others stay as they ended, and no trial is added (all four were chosen).
    resumed = {r.id: r for r in executors.resume_sweep(store, result.sweep_id).records}
    again = resumed[interrupted.id]
    assert sorted(resumed) == sorted(r.id for r in records)
    assert again.status in ("done", "pruned"), again.error
    epochs = [row.epoch for row in again.history]
    if again.status == "done":
        assert epochs == list(range(1, EPOCHS + 1))
    else:
        assert epochs[: len(interrupted.history)] == [row.epoch for row in interrupted.history]
        assert epochs in ([1, 2], [1, 2, 3, 4]), epochs  # stopped at a rung
    assert all(resumed[r.id].status == r.status for r in records if r is not interrupted)
    store.close()
    _assert_the_worker_sees_nothing_in(cluster["hidden"], cluster["worker"])
