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

`run`, `RunStore` and the artifact names are re-exported here, so
`builder_ui.engine.run(spec, store=RunStore("runs"))` works.
"""

from builder_ui.engine.records import FINAL_STATUSES, STATUSES, RunRecord
from builder_ui.engine.store import DB_NAME, RunNotFoundError, RunStore, StatusError
from builder_ui.engine.train import (
    BACKUP_DIR,
    MODEL_FILE,
    TENSORBOARD_DIR,
    TRACEBACK_FILE,
    artifact_dir,
    preflight,
    run,
)

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
