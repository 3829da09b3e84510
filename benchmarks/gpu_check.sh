#!/usr/bin/env bash
# GPU check for keras_seq: which device the backend trains on, every example spec trained for
# a few epochs through `keras-seq` (status, throughput, metrics), then the recurrent and
# attention benchmarks with small settings. Works with TensorFlow or with JAX alone
# (KERAS_BACKEND=jax on a host without TensorFlow).
#
#   benchmarks/gpu_check.sh                     # on a GPU host: results in benchmarks/results/gpu_*
#   KERAS_BACKEND=jax benchmarks/gpu_check.sh   # the same with JAX
#   benchmarks/gpu_check.sh --cpu-smoke         # anywhere: 1 epoch, 2-trial sweeps, --quick
#                                               # benchmarks, results in a temporary directory
#
# Options:
#   --python PY       the interpreter (default: .venv/bin/python if present, else python3)
#   --venv DIR        create a virtual environment in DIR and install the repository there
#                     (with the jax extra when KERAS_BACKEND=jax); then use it
#   --epochs N        epochs per spec (default 3; 1 with --cpu-smoke)
#   --output-dir DIR  where gpu_*.json and gpu_*.md go (default benchmarks/results; a new
#                     temporary directory with --cpu-smoke)
#   --specs 'GLOB'    the specs to train (default examples/specs/*.yaml)
#   --skip-benchmarks only the specs
#   --cpu-smoke       check the script itself on a CPU: no GPU required, tiny settings
#
# Writes gpu_specs.json/.md (device and one row per run), gpu_recurrent.json/.md,
# gpu_attention.json/.md and gpu_mfu.json/.md (the benchmarks' own records). Exits 1 if no
# GPU is visible (without --cpu-smoke), if a spec's run does not end `done`, or if a
# benchmark fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export GPU_CHECK_COMMAND="benchmarks/gpu_check.sh $*"  # for the results' record

PY=""
VENV=""
EPOCHS=""
OUTPUT_DIR=""
SPECS="examples/specs/*.yaml"
SMOKE=0
BENCHMARKS=1

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "gpu_check: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --python) PY="${2:?--python needs a path}"; shift 2 ;;
        --venv) VENV="${2:?--venv needs a directory}"; shift 2 ;;
        --epochs) EPOCHS="${2:?--epochs needs a number}"; shift 2 ;;
        --output-dir) OUTPUT_DIR="${2:?--output-dir needs a directory}"; shift 2 ;;
        --specs) SPECS="${2:?--specs needs a glob}"; shift 2 ;;
        --skip-benchmarks) BENCHMARKS=0; shift ;;
        --cpu-smoke) SMOKE=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done

if [ -z "$EPOCHS" ]; then
    if [ "$SMOKE" = 1 ]; then EPOCHS=1; else EPOCHS=3; fi
fi
case "$EPOCHS" in ''|*[!0-9]*|0) die "--epochs must be a positive integer, got '$EPOCHS'" ;; esac

WORK="$(mktemp -d "${TMPDIR:-/tmp}/keras-seq-gpu-check.XXXXXX")"
if [ -z "$OUTPUT_DIR" ]; then
    if [ "$SMOKE" = 1 ]; then OUTPUT_DIR="$WORK/results"; else OUTPUT_DIR="$ROOT/benchmarks/results"; fi
fi
mkdir -p "$OUTPUT_DIR" "$WORK/logs" "$WORK/bench"
OUTPUT_DIR="$(cd "$OUTPUT_DIR" && pwd)"

export KERAS_BACKEND="${KERAS_BACKEND:-tensorflow}"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
export PYTHONUNBUFFERED=1

# --- The interpreter ------------------------------------------------------------------------
if [ -n "$VENV" ]; then
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    extra=""
    [ "$KERAS_BACKEND" = jax ] && extra="[jax]"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e ".$extra"
    PY="$VENV/bin/python"
elif [ -z "$PY" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY="python3"; fi
fi
command -v "$PY" >/dev/null 2>&1 || die "no Python at '$PY'"
"$PY" -c "import keras_seq, builder_ui" 2>/dev/null \
    || die "keras_seq is not importable with $PY; install it (pip install -e .) or pass --venv DIR"
if ! "$PY" -c "import keras" 2>"$WORK/logs/keras-import.log"; then
    cat "$WORK/logs/keras-import.log" >&2
    die "Keras cannot start with KERAS_BACKEND=$KERAS_BACKEND (is the backend installed?)"
fi

echo "gpu_check: python $("$PY" -c 'import sys; print(sys.version.split()[0])'), \
KERAS_BACKEND=$KERAS_BACKEND, work in $WORK, results in $OUTPUT_DIR"

# --- The device -----------------------------------------------------------------------------
"$PY" - "$WORK/device.json" <<'PYTHON'
import json
import sys

import keras

from builder_ui.engine import devices

backend = keras.backend.backend()
device = devices.detect(backend)
info = {
    "backend": backend,
    "kind": device.kind,
    "name": device.name,
    "gpu_count": device.count,
    "precision_auto": devices.resolve_precision("auto", device),
}
if backend == "jax":
    import jax

    info["backend_devices"] = [f"{d.platform}:{d.device_kind}" for d in jax.devices()]
elif backend == "tensorflow":
    import tensorflow as tf

    info["backend_devices"] = [d.name for d in tf.config.list_physical_devices()]
print(
    f"gpu_check: device {info['name']} ({info['kind']}, {info['gpu_count']} GPU(s) seen by "
    f"{backend}); mixed_precision auto = {info['precision_auto']}"
)
with open(sys.argv[1], "w", encoding="utf-8") as file:
    json.dump(info, file, indent=2)
PYTHON

KIND="$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['kind'])" "$WORK/device.json")"
if [ "$KIND" != GPU ] && [ "$SMOKE" = 0 ]; then
    echo "gpu_check: no GPU is visible to $KERAS_BACKEND; run with --cpu-smoke to check on a CPU" >&2
    exit 1
fi

# --- Every example spec -----------------------------------------------------------------------
RUNS="$WORK/runs"
FAILED=0
shopt -s nullglob
# shellcheck disable=SC2206  # the glob is meant to expand
SPEC_FILES=($SPECS)
[ ${#SPEC_FILES[@]} -gt 0 ] || die "no spec matches '$SPECS'"
for spec in "${SPEC_FILES[@]}"; do
    name="$(basename "$spec" .yaml)"
    args=(--runs "$RUNS" --set "train.epochs=$EPOCHS")
    if grep -q '^sweep:' "$spec"; then
        command=sweep
        # Two trials are enough to check a sweep on a CPU.
        [ "$SMOKE" = 1 ] && args+=(--set sweep.method=random --set sweep.num_trials=2)
    else
        command=train
    fi
    start=$(date +%s)
    if "$PY" -m builder_ui.cli "$command" "$spec" "${args[@]}" >"$WORK/logs/$name.log" 2>&1; then
        echo "gpu_check: $command $spec: done in $(( $(date +%s) - start )) s"
    else
        FAILED=1
        echo "gpu_check: $command $spec: FAILED (last lines of $WORK/logs/$name.log):" >&2
        tail -n 15 "$WORK/logs/$name.log" >&2
    fi
done

if ! "$PY" - "$RUNS" "$WORK/device.json" "$OUTPUT_DIR" "$EPOCHS" "$SMOKE" <<'PYTHON'
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, "benchmarks")
import _timing  # noqa: E402

from builder_ui.engine import RunStore  # noqa: E402

runs_dir, device_file, output_dir, epochs, smoke = sys.argv[1:]
sys.argv = os.environ["GPU_CHECK_COMMAND"].split()  # what environment() records as the command
device = json.loads(Path(device_file).read_text())
rows = []
if Path(runs_dir, "runs.sqlite").is_file():
    with RunStore(runs_dir) as store:
        for record in store.list_runs(history=True):
            rows.append(
                {
                    "name": record.name,
                    "id": record.id,
                    "status": record.status,
                    "device": record.device,
                    "precision": record.precision,
                    "params": record.params,
                    "epochs": record.epochs_done,
                    "wall_time_s": record.wall_time,
                    "examples_per_sec": record.examples_per_sec,
                    "epoch_s": [row.seconds for row in record.history],
                    "metrics": record.metrics,
                    "error": record.error,
                }
            )
record = {
    "benchmark": "gpu_specs",
    "description": "Every example spec trained through `keras-seq train`/`sweep`.",
    "settings": {"epochs": int(epochs), "quick": smoke == "1", "cpu_smoke": smoke == "1"},
    "device": device,
    "environment": _timing.environment(),
    "runs": rows,
    "all_done": bool(rows) and all(row["status"] == "done" for row in rows),
}


def number(value, spec):
    return "—" if value is None else format(value, spec)


def last_epoch_s(row):
    return row["epoch_s"][-1] if row["epoch_s"] else None


def main_metric(metrics):
    for name in ("accuracy", "sequence_accuracy", "bleu", "token_accuracy", "loss"):
        if metrics.get(name) is not None:
            return f"{name} {metrics[name]:.3g}"
    return "—"


lines = _timing.markdown_preamble("GPU check: the example specs", record)
lines += [
    f"- Device: {device['name']} ({device['kind']}), Keras backend {device['backend']}, "
    f"`mixed_precision: auto` = {device['precision_auto']}.",
    f"- Each spec trained for {epochs} epoch(s); examples/s is over `fit` time (the first "
    "epoch includes tracing), the last epoch's time is steadier.",
    "",
    _timing.markdown_table(
        ("run", "status", "precision", "params", "examples/s", "last epoch (s)", "metric"),
        [
            (
                f"`{row['name']}`",
                row["status"],
                row["precision"] or "—",
                number(row["params"], ","),
                number(row["examples_per_sec"], ",.0f"),
                number(last_epoch_s(row), ".2f"),
                main_metric(row["metrics"]),
            )
            for row in rows
        ],
    ),
    "",
]
_timing.write_results("gpu_specs", record, "\n".join(lines), output_dir)
print(f"gpu_check: {len(rows)} runs recorded in {output_dir}/gpu_specs.json")
for row in rows:
    if row["status"] != "done":
        print(f"gpu_check: run {row['name']} ended {row['status']}: {row['error']}", file=sys.stderr)
sys.exit(0 if record["all_done"] else 1)
PYTHON
then
    FAILED=1
fi

# --- Benchmarks -----------------------------------------------------------------------------
run_benchmark() {  # name, arguments...
    local name="$1"
    shift
    echo "gpu_check: benchmarks/$name.py $*"
    if "$PY" "benchmarks/$name.py" "$@" --output-dir "$WORK/bench" >"$WORK/logs/bench-$name.log" 2>&1; then
        cp "$WORK/bench/$name.json" "$OUTPUT_DIR/gpu_$name.json"
        cp "$WORK/bench/$name.md" "$OUTPUT_DIR/gpu_$name.md"
        grep -E '^(PASS|FAIL)' "$WORK/logs/bench-$name.log" || true
    else
        FAILED=1
        echo "gpu_check: benchmarks/$name.py FAILED (last lines of $WORK/logs/bench-$name.log):" >&2
        tail -n 15 "$WORK/logs/bench-$name.log" >&2
    fi
}
if [ "$BENCHMARKS" = 1 ]; then
    if [ "$SMOKE" = 1 ]; then
        run_benchmark recurrent --quick --variants cec-forget
        run_benchmark attention --quick --memory none --lengths 64
        run_benchmark mfu --quick
    else
        # Every CECLSTM variant against keras.layers.LSTM (cuDNN where the backend has it).
        run_benchmark recurrent --rounds 5
        # Peak memory up to T = 8192, where the fused attention kernel matters most.
        run_benchmark attention --rounds 5 --lengths 256,1024,8192
        # Transformer training MFU under mixed_bfloat16 (target >= 30%).
        run_benchmark mfu --rounds 5
    fi
fi

ls "$OUTPUT_DIR"/gpu_* 2>/dev/null | sed 's/^/gpu_check: wrote /'
if [ "$FAILED" = 0 ]; then
    echo "gpu_check: OK"
    rm -rf "$RUNS"
else
    echo "gpu_check: FAILED; runs and logs kept in $WORK" >&2
fi
exit "$FAILED"
