"""The experiment engine: train a spec, record the run, queue runs on devices, sweep.

- `train`: `run(spec, store=...)`, one training with `model.fit`, each epoch
  recorded and checkpointed (the pipeline and callback order are in its docstring).
- `store`: `RunStore`, the SQLite run store (runs, epochs, artifacts, statuses).
- `artifacts`: a run's recorded files read back, only from inside the run's own folder.
- `progress`: progress callbacks, the terminal bar, messages across processes.
- `queue`: `JobQueue`, the app's training queue, one worker per device slot.
- `worker`: the training process a slot's runs train in.
- `slots`, `devices`: device slots of the queue; device, precision and
  distribution of a run.
- `executors`: sweeps, run locally or on a Ray cluster.
- `interrupts`: Ctrl-C noted as well as raised, so that training stops even when
  Python drops the KeyboardInterrupt.

`run`, `RunStore` and the artifact names are re-exported here (imported on first use), so
`builder_ui.engine.run(spec, store=RunStore("runs"))` works.
"""

import importlib
from typing import Any

# Each name re-exported here, and the module of this package that holds it: imported on first
# use (PEP 562), so that a light module (`records`) costs no more than itself to import.
_EXPORTS = {
    "FINAL_STATUSES": "records",
    "STATUSES": "records",
    "RunRecord": "records",
    "DB_NAME": "store",
    "RunNotFoundError": "store",
    "RunStore": "store",
    "StatusError": "store",
    "BACKUP_DIR": "artifacts",
    "MODEL_FILE": "artifacts",
    "TENSORBOARD_DIR": "artifacts",
    "TRACEBACK_FILE": "artifacts",
    "artifact_dir": "train",
    "preflight": "train",
    "run": "train",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "BACKUP_DIR",
    "DB_NAME",
    "FINAL_STATUSES",
    "MODEL_FILE",
    "STATUSES",
    "TENSORBOARD_DIR",
    "TRACEBACK_FILE",
    "RunNotFoundError",
    "RunRecord",
    "RunStore",
    "StatusError",
    "artifact_dir",
    "preflight",
    "run",
]
