"""The app reads data only from its uploads folder and its `--data-dir` folders.

A spec with `task.path: /any/server/file` is refused at `task.path`, with the
value, by the Build tab's check and summary, the Train tab's queue (sweeps
too) and the Inspect tab's predictions, before anything is read or queued;
symlinks and `..` are followed first. The CLI's check (`check(text)` without
an app) still takes the user's own paths. No Gradio: the actions, a real run
store, real files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import pytest
import yaml
from pydantic import Field

from builder_ui import engine
from builder_ui.app import actions
from builder_ui.app.data_paths import spec_paths
from builder_ui.specs import SpecError, TaskParams

# Rows `label,text` that a tokens classifier reads: a file the app must not show.
SECRET_ROWS = "".join(
    f"{'yes' if i % 2 else 'no'},the secret word is hunter{i}\n" for i in range(40)
)


def text_of(document: dict) -> str:
    return yaml.safe_dump(document, sort_keys=False)


def csv_spec(path: str | os.PathLike, name: str = "server-file") -> dict:
    """A tiny tokens classifier over the CSV at `path`."""
    return {
        "version": 2,
        "name": name,
        "task": {"type": "csv_sequences", "path": str(path), "inputs": "tokens"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "simple", "units": 4},
        },
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
    }


@pytest.fixture
def secret(tmp_path) -> Path:
    """A readable file outside the app's folders (as /etc/passwd would be)."""
    path = tmp_path / "elsewhere" / "secret.csv"
    path.parent.mkdir()
    path.write_text(SECRET_ROWS, encoding="utf-8")
    return path


@pytest.fixture
def ctx(tmp_path):
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"])
    yield context
    context.close()


def uploaded(ctx, tmp_path) -> dict:
    """The `task:` section of a good file uploaded through the Build tab."""
    source = tmp_path / "mine.csv"
    source.write_text(SECRET_ROWS.replace("secret", "public"), encoding="utf-8")
    result = actions.upload(ctx, source, "labelled_sequences")
    assert result.ok, result.message
    return result.task


def assert_refused_at(problems, field: str, value: str) -> None:
    messages = [message for path, message in problems if path == field]
    assert messages, problems
    assert repr(value) in messages[0] and "--data-dir" in messages[0], messages[0]
    assert "hunter" not in messages[0]  # nothing of the file's text


def test_the_apps_check_refuses_a_server_file_at_task_path_and_the_clis_does_not(ctx, secret):
    text = text_of(csv_spec(secret))
    assert actions.check(text).ok  # `keras-seq validate`: the user's own path
    result = actions.check(text, ctx)
    assert not result.ok
    assert_refused_at(result.problems, "task.path", str(secret))


def test_queueing_a_spec_that_names_a_server_file_is_refused_and_stores_nothing(ctx, secret):
    with pytest.raises(SpecError) as refused:
        actions.queue_spec(ctx, text_of(csv_spec(secret)))
    assert_refused_at(refused.value.problems, "task.path", str(secret))
    assert ctx.jobs.jobs() == [] and ctx.store.list_runs() == []
    assert not (ctx.runs_dir / "runs.sqlite").exists()


def test_the_model_summary_refuses_a_server_file_before_reading_it(ctx, secret):
    with pytest.raises(SpecError) as refused:
        actions.summarize(text_of(csv_spec(secret)), ctx)
    assert_refused_at(refused.value.problems, "task.path", str(secret))


def test_a_symlink_or_dotdot_out_of_the_uploads_folder_is_refused(ctx, tmp_path, secret):
    inside = Path(uploaded(ctx, tmp_path)["path"])
    link = inside.parent / "link.csv"
    link.symlink_to(secret)
    climbing = f"{ctx.uploads_root}/../../elsewhere/secret.csv"
    assert Path(climbing).resolve() == secret.resolve()
    for value in (str(link), climbing):
        result = actions.check(text_of(csv_spec(value)), ctx)
        assert_refused_at(result.problems, "task.path", value)


def test_an_uploaded_file_and_a_file_in_a_data_dir_are_read(ctx, tmp_path, secret):
    document = csv_spec("unused")
    document["task"] = uploaded(ctx, tmp_path)
    assert actions.check(text_of(document), ctx).ok
    allowed = actions.AppContext(tmp_path / "runs2", slots=["CPU"], data_dirs=[secret.parent])
    try:
        assert actions.check(text_of(csv_spec(secret)), allowed).ok
        # `..` inside the data directory stays inside it.
        assert actions.check(text_of(csv_spec(f"{secret.parent}/./x/../secret.csv")), allowed).ok
        assert not actions.check(text_of(csv_spec(secret)), ctx).ok  # another app's folders
    finally:
        allowed.close()


def test_a_sweep_over_data_paths_is_refused_at_the_swept_value(ctx, tmp_path, secret):
    document = csv_spec("unused", name="sweep")
    document["task"] = uploaded(ctx, tmp_path)
    good = document["task"]["path"]
    document["sweep"] = {"parameters": {"task.path": [good, str(secret)]}}
    result = actions.check(text_of(document), ctx)
    assert_refused_at(result.problems, 'sweep.parameters["task.path"][1]', str(secret))
    with pytest.raises(SpecError) as refused:
        actions.queue_spec(ctx, text_of(document))
    assert any(str(secret) in message for _, message in refused.value.problems)
    # A whole task section swept in at once is walked too.
    whole = csv_spec("unused", name="whole")
    whole["task"] = uploaded(ctx, tmp_path)
    bad_task = {"type": "csv_sequences", "path": str(secret), "inputs": "tokens"}
    whole["sweep"] = {"parameters": {"task": [dict(whole["task"]), bad_task]}}
    result = actions.check(text_of(whole), ctx)
    assert_refused_at(result.problems, 'sweep.parameters["task"][1].path', str(secret))
    with pytest.raises(SpecError):
        actions.queue_spec(ctx, text_of(whole))
    assert ctx.store.list_runs() == []


class PluginTaskParams(TaskParams):
    """A plugin's task with path fields the app has never heard of."""

    type: str = "plugin_corpus"
    corpus: Path  # typed as a path
    vocab_file: str | None = None  # named as a file
    extra_paths: list[str] = Field(default_factory=list)  # a list of them
    images: Annotated[str, Field(json_schema_extra={"format": "path"})] = ""  # declared
    header_file: bool = False  # named like a file, but a flag: not a path
    label: str = "/not/a/path/field"


def test_a_plugins_path_fields_are_found_by_their_type_name_or_schema_format():
    task = PluginTaskParams(
        corpus=Path("/srv/a"), vocab_file="/srv/b", extra_paths=["/srv/c"], images="/srv/d"
    )
    # A real spec whose task section is the plugin's (as its registered builder would make).
    spec = actions.check(actions.preset_text("gru")).spec.model_copy(update={"task": task})
    assert sorted(spec_paths(spec)) == [
        ("task.corpus", "/srv/a"),
        ("task.extra_paths[0]", "/srv/c"),
        ("task.images", "/srv/d"),
        ("task.vocab_file", "/srv/b"),
    ]


def test_an_upload_larger_than_the_apps_own_cap_is_refused_and_nothing_stored(tmp_path):
    small = actions.AppContext(tmp_path / "runs", slots=["CPU"], max_upload_bytes=1000)
    try:
        source = tmp_path / "big.csv"
        source.write_text(SECRET_ROWS * 2, encoding="utf-8")
        result = actions.upload(small, source, "labelled_sequences")
        size = source.stat().st_size
        assert not result.ok
        assert result.message == (
            f"big.csv: {size:,} bytes is more than an upload may have (1,000 bytes)."
        )
        assert not small.uploads_root.exists()
    finally:
        small.close()


@pytest.mark.large
def test_predict_on_a_cli_run_whose_data_is_elsewhere_is_refused_unless_its_folder_is_allowed(
    tmp_path, secret
):
    runs = tmp_path / "runs"
    with engine.RunStore(runs) as store:  # what `keras-seq train` does with the user's file
        record = engine.run(csv_spec(secret), store=store)
    assert record.status == "done", record.error
    ctx = actions.AppContext(runs, slots=["CPU"])
    try:
        with pytest.raises(actions.AppError) as refused:
            actions.predict(ctx, record.id, "", 0)
        message = str(refused.value)
        assert "task.path" in message and repr(str(secret)) in message
        assert "hunter" not in message
    finally:
        ctx.close()
    allowed = actions.AppContext(runs, slots=["CPU"], data_dirs=[secret.parent])
    try:
        assert actions.predict(allowed, record.id, "", 0) is not None
    finally:
        allowed.close()
