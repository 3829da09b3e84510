"""The test tiers, and the order in which the files run.

Tiers (as keras-hub's): a test is `large` when it trains to a threshold, starts another
process (a browser, a Ray cluster, a fresh interpreter, any subprocess), or runs longer than
5 s. `make check` runs every test that is not `large`; `make test` runs them all. The tier is
measured, not guessed: a test left unmarked that starts a process, or whose setup and call
took more than `MARGIN` times `LARGE_SECONDS` both of wall time and of this process's CPU time,
fails with a message that says so. Wall and CPU time must both exceed the bound, so a quick test
slowed by a busy machine (wall time up, CPU time not) or one that keeps several cores busy for a
moment (CPU time up, wall time not) is not misjudged; a test that only waits is caught by
`WAIT_SECONDS`, far above what load alone makes of a quick test. The bound is the tiers'
(5 s on 2 quiet cores); the run fails only past twice that, because a slower machine, or a
backend whose first use of an op compiles it (JAX) in whichever test comes first, makes a
4-second test take 5.5 there (CI did, at 2.9 s here). A test between the two is listed at the
end of the run, to be marked or made cheaper. `KERAS_SEQ_TIER_GUARD=0` turns the check off (to
time a test that is being written).

Order: `make test` runs the files on two workers (`--dist loadfile`), handing the next file to
the worker that frees up first. The files of large tests go first, longest first, by the
seconds `tests/durations.json` lists for them per backend (`make durations` measures them;
only the order matters, so the machine's speed does not), then the files of quick tests in
collection order: the longest-processing-time rule keeps both workers busy to the end.
"""

from __future__ import annotations

import json
import multiprocessing.util
import os
import random
import signal
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # tests/test_tiers.py runs this conftest on small test files

# The bound is settable so that the guard's own test (tests/test_tiers.py) need not wait 5 s.
LARGE_SECONDS = float(os.environ.get("KERAS_SEQ_LARGE_SECONDS", "5"))
MARGIN = 2.0  # the run fails past MARGIN * LARGE_SECONDS; between the two, a test is listed
WAIT_SECONDS = 24 * LARGE_SECONDS
GUARD = os.environ.get("KERAS_SEQ_TIER_GUARD", "1") != "0"
# KERAS_SEQ_TIER_NEAR=FILE lists the unmarked tests that came within NEAR of the bound (both
# times over 60% of it): the ones another machine may find over it, to mark with a margin.
NEAR_FILE = os.environ.get("KERAS_SEQ_TIER_NEAR")
NEAR = 0.6
# Audit events of a process being started (subprocess, os.system, exec, spawn, fork).
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork"}
)

DURATIONS = Path(__file__).with_name("durations.json")
# Set to record this run's file times into DURATIONS (`make durations`).
RECORD = os.environ.get("KERAS_SEQ_RECORD_DURATIONS") == "1"
_recorded: dict[str, float] = defaultdict(float)


def _share_the_cores() -> None:
    """Give each xdist worker its share of the cores for the backends' thread pools.

    PyTorch's and NumPy's OpenMP pools default to one thread per core in every worker, so two
    workers on two cores oversubscribe them: OpenMP threads spin waiting for each other and a
    200-step backward pass on PyTorch measured 4.3 s instead of 0.2 s (the whole PyTorch fast
    tier 44 s instead of 33 s). TensorFlow's intra-op pool (Eigen's) spins the same way: the
    ConvLSTM learning test took 80 s of CPU with its default two threads beside another busy
    process, 51 s with one (`TF_NUM_INTRAOP_THREADS`). XLA on CPU (JAX) showed no such loss
    and is left alone. Set before any backend is imported (keras comes in at session start);
    a value the caller set is kept. Processes the tests start inherit it.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        cores = (
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else os.cpu_count() or 1
        )
        share = str(max(1, cores // workers))
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
            os.environ.setdefault(name, share)


_share_the_cores()


def _compile_for_tests() -> None:
    """Ask XLA (JAX's compiler, and TensorFlow's for `jit_compile=True`) not to optimise.

    JAX runs every eager operation as a small XLA program compiled at its first use, so the
    JAX tests spend most of their CPU in XLA's compiler, and most of that in its LLVM
    optimisation passes: `--xla_backend_optimization_level=0` took the JAX stage of
    `make test` from 386 s to 205 s on 2 cores (2026-12-07), every test passing. What the
    tests prove is the layers' equations (against NumPy, with tolerances) and that their
    steps compile; how fast XLA's optimised code runs is the benchmarks' question, and
    `benchmarks/` runs with the default level (its results record `XLA_FLAGS`). A level the
    caller set is kept. Set before any backend is imported; processes the tests start
    inherit it.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_optimization_level=0".strip()


_compile_for_tests()


_HAS_MASK = hasattr(signal, "pthread_sigmask")


def _take_ctrl_c_back() -> None:
    """Give Ctrl-C (SIGINT) back to the test processes when they were started without it.

    A shell without job control starts a background command (`make test &`, a CI step run
    with `&`) with SIGINT ignored, and every process below it inherits that, fresh Pythons
    included (Python installs no handler for a signal it inherits ignored). The tests of
    Ctrl-C then fail, in process and in the children they start: `DID NOT RAISE
    KeyboardInterrupt`, a `keras-seq sweep` that does not stop. The test processes get
    Python's own handler back, and SIGINT unblocked, so that those tests see what a user's
    terminal gives; the children they start inherit the default. Such a run is not in the
    terminal's foreground, so no key press reaches it either way.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if _HAS_MASK:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


_take_ctrl_c_back()


def _backend() -> str:
    return os.environ.get("KERAS_BACKEND", "tensorflow")


# --- The tier guard --------------------------------------------------------------------------


class _Watch:
    """What the running test did: the processes it started, and the time it took."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.active = False
        self.lock = threading.Lock()

    def audit(self, event: str, args: tuple) -> None:
        if self.active and event in _PROCESS_EVENTS:
            with self.lock:
                self.started.append(f"{event} {_describe(args)}")


def _describe(args: tuple) -> str:
    for arg in args:
        if isinstance(arg, (list, tuple)) and arg:
            return " ".join(str(part) for part in arg[:3])[:120]
        if isinstance(arg, (str, bytes)):
            return str(arg)[:120]
    return ""


_watch = _Watch()
if GUARD:
    sys.addaudithook(_watch.audit)  # an audit hook cannot be removed: it checks `active`
    # multiprocessing's spawn and forkserver start a fresh interpreter without an audit event.
    _spawnv_passfds = multiprocessing.util.spawnv_passfds

    def _spawnv_recorded(path, args, passfds):
        _watch.audit("subprocess.Popen", (path, args))
        return _spawnv_passfds(path, args, passfds)

    multiprocessing.util.spawnv_passfds = _spawnv_recorded


def pytest_itemcollected(item) -> None:
    """`large_on("jax", ...)`: large on those backends only (where XLA compiles it, say)."""
    if any(_backend() in marker.args for marker in item.iter_markers("large_on")):
        item.add_marker(pytest.mark.large)  # before `-m` deselects by marker


def pytest_sessionstart(session) -> None:
    """Load Keras (and its backend) before the first test, in each process that runs tests.

    Most test modules import Keras when they are collected; a file whose tests import it
    lazily would otherwise charge the import (about 6 s of CPU on TensorFlow, and the `uname`
    process that `platform` starts) to whichever quick test came first when the file runs
    alone.
    """
    controller = session.config.getoption("numprocesses", None) and not hasattr(
        session.config, "workerinput"
    )
    if GUARD and not controller:
        import keras  # noqa: F401


def _cpu_seconds() -> float:
    times = os.times()  # this process's threads, and the children it has waited for
    return times.user + times.system + times.children_user + times.children_system


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item._tier_start = (time.perf_counter(), _cpu_seconds())
    with _watch.lock:
        _watch.started.clear()
    _watch.active = True
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        _watch.active = False
    if not (GUARD and call.when == "call" and report.passed):
        return
    if item.get_closest_marker("large"):
        return
    wall_start, cpu_start = item._tier_start
    wall = time.perf_counter() - wall_start
    cpu = _cpu_seconds() - cpu_start
    with _watch.lock:
        started = list(_watch.started)
    if NEAR_FILE and wall > NEAR * LARGE_SECONDS and cpu > NEAR * LARGE_SECONDS:
        with open(NEAR_FILE, "a", encoding="utf-8") as near:  # one short line per test
            near.write(f"{item.nodeid}\t{wall:.1f}\t{cpu:.1f}\n")
    reasons = []
    if started:
        reasons.append(f"it started {len(started)} process(es), the first: {started[0]}")
    took = f"setup and call took {wall:.1f} s wall, {cpu:.1f} s CPU"
    if min(wall, cpu) > MARGIN * LARGE_SECONDS or wall > WAIT_SECONDS:
        reasons.append(took)
    elif min(wall, cpu) > LARGE_SECONDS:  # listed at the end (xdist carries user_properties)
        report.user_properties.append(("over_the_tier_bound", took))
    if reasons:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is not marked large, but {'; '.join(reasons)}. A test that starts "
            f"a process or takes more than {LARGE_SECONDS:.0f} s is `@pytest.mark.large` "
            "(tests/conftest.py)."
        )


# --- Signal handlers left behind ------------------------------------------------------------

# A test that leaves a handler of one of these installed (an app's Ctrl-C handler, a training
# worker's SIG_IGN) changes what every later test in its process sees: Ctrl-C tests then fail
# far from the cause, in some orders only. Each test must put back what it found.
_GUARDED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1") if hasattr(signal, name)
)


def _kernel_signal_state() -> dict[str, list[str]]:
    """Which guarded signals the kernel has blocked, ignored or caught for this thread.

    What Python's `signal.getsignal` cannot see: a mask or disposition that C code set
    (`/proc/thread-self/status`; empty where there is no such file)."""
    try:
        lines = Path("/proc/thread-self/status").read_text().splitlines()
    except OSError:
        return {}
    state = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("SigBlk", "SigIgn", "SigCgt"):
            bits = int(value.strip(), 16)
            state[key] = [signal.Signals(s).name for s in _GUARDED_SIGNALS if bits >> (s - 1) & 1]
    return state


@pytest.fixture(autouse=True)
def _signal_handlers_put_back(request):
    """Fail a test (at teardown) that leaves a signal handler or the signal mask changed, and
    put them back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.getsignal(signum) for signum in _GUARDED_SIGNALS}
    kernel_before = _kernel_signal_state()
    mask_before = signal.pthread_sigmask(signal.SIG_BLOCK, []) if _HAS_MASK else None
    yield
    changed = {
        signal.Signals(signum).name: (handler, signal.getsignal(signum))
        for signum, handler in before.items()
        if signal.getsignal(signum) != handler
    }
    for signum, handler in before.items():
        if handler is not None:  # None: set outside Python, cannot be put back from here
            signal.signal(signum, handler)
    kernel_after = _kernel_signal_state()  # with Python's handlers put back
    if kernel_after != kernel_before and mask_before is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask_before)
    if changed:
        pytest.fail(
            f"{request.node.nodeid} left signal handlers changed (name: before, after): "
            f"{changed}; a test must put back the handlers it or the code it runs installs.",
            pytrace=False,
        )
    if kernel_after != kernel_before:
        pytest.fail(
            f"{request.node.nodeid} left the main thread's signals changed below Python "
            f"(blocked, ignored, caught): {kernel_before} -> {kernel_after}",
            pytrace=False,
        )


# --- The order of the files ------------------------------------------------------------------


def _load() -> dict[str, dict[str, float]]:
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--shuffle-files",
        type=int,
        metavar="SEED",
        help="run the test files in a random order drawn from SEED (tests within a file keep "
        "theirs): a test that passes only after some other file is found this way",
    )


AGNOSTIC = "backend_agnostic"


def _selects_only_agnostic(markexpr: str) -> bool:
    """Whether `-m` keeps only tests marked `backend_agnostic` (what make runs on JAX, PyTorch)."""
    words = markexpr.split()
    return words[:1] == [AGNOSTIC] and (len(words) == 1 or words[1] == "and")


def pytest_ignore_collect(collection_path, config):
    """Under `-m "backend_agnostic ..."`, skip importing the test files that cannot hold one.

    A test is marked `backend_agnostic` in its own file (no conftest adds the mark), so a test
    file whose text never names the mark holds none, and importing it only costs time: under
    JAX and PyTorch the other 160 test files (the app's, the engine's, with Gradio and
    Playwright) took most of each worker's 15 s of collection.
    """
    if (
        collection_path.suffix == ".py"
        and collection_path.name.startswith("test_")
        and _selects_only_agnostic(config.getoption("markexpr", ""))
        and AGNOSTIC not in collection_path.read_text(encoding="utf-8")
    ):
        return True
    return None


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` deselected what will not run
def pytest_collection_modifyitems(config, items) -> None:
    seed = config.getoption("--shuffle-files")
    if seed is not None:
        files = list(dict.fromkeys(item.path for item in items))
        random.Random(seed).shuffle(files)
        rank = {path: index for index, path in enumerate(files)}
        items.sort(key=lambda item: rank[item.path])
        return
    data = _load()
    # A file not yet measured on this backend counts its TensorFlow time (a close enough order).
    measured = {**data.get("tensorflow", {}), **data.get(_backend(), {})}
    large = {str(item.path) for item in items if item.get_closest_marker("large")}
    root = Path(__file__).parent.parent

    def seconds(path: Path) -> float:
        if str(path) not in large:
            return 0.0
        return measured.get(path.relative_to(root).as_posix(), 30.0)

    first_seen = {path: index for index, path in enumerate(dict.fromkeys(i.path for i in items))}
    length = {path: seconds(path) for path in first_seen}
    items.sort(key=lambda item: (-length[item.path], first_seen[item.path]))


def pytest_terminal_summary(terminalreporter) -> None:
    over = [
        (report.nodeid, value)
        for report in terminalreporter.stats.get("passed", [])
        for key, value in getattr(report, "user_properties", ())
        if key == "over_the_tier_bound"
    ]
    if over:
        terminalreporter.section("over the large tier's bound")
        terminalreporter.line(
            f"Not marked large, and over {LARGE_SECONDS:.0f} s here (the run fails past "
            f"{MARGIN * LARGE_SECONDS:.0f} s): mark them `large` or make them cheaper."
        )
        for nodeid, took in over:
            terminalreporter.line(f"{nodeid}: {took}")


def pytest_runtest_logreport(report) -> None:
    if RECORD:
        _recorded[report.nodeid.split("::", 1)[0]] += report.duration  # setup, call, teardown


def pytest_sessionfinish(session) -> None:
    if RECORD and not hasattr(session.config, "workerinput") and _recorded:
        data = _load()
        # Merged: a run of some files updates theirs and keeps the others' times. Only the files
        # of large tests are ordered by their time; the quick ones run in collection order.
        times = {**data.get(_backend(), {}), **{k: round(v) for k, v in _recorded.items()}}
        data[_backend()] = {k: v for k, v in sorted(times.items()) if v >= LARGE_SECONDS}
        temporary = DURATIONS.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(DURATIONS)


@pytest.fixture
def ray_temp_root():
    """A fresh directory right under the system's temp directory, for `RAY_TMPDIR`; removed after.

    Ray puts its Unix sockets under `RAY_TMPDIR` (`ray/session_<date>_<pid>/sockets/...`),
    and a socket path may not exceed 107 bytes: under pytest-xdist a `tmp_path`
    (`/tmp/pytest-of-root/pytest-N/popen-gwK/rayJ`) leaves too little room. `/tmp/rayXXXXXXXX`
    leaves plenty, and is still the test's own, never the machine's `/tmp/ray`.
    """
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="ray", dir=tempfile.gettempdir()))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium shared by the test process's browser tests (each opens its own
    context). One per process: Playwright's sync API refuses a second one started while the
    first runs (it finds the first one's asyncio loop)."""
    # Playwright is loaded by the browser tests alone.
    from tests.app.browser import launched_chromium

    with launched_chromium() as chromium:
        yield chromium
