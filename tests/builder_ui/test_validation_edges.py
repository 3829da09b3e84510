"""Spec input at the edges (issue 42): each refused in one line that names the field or the
line and the value, exit 2 from the command line, through the app's check and queue too.

- a YAML key that is a list (`? [a, b]: 1`): was a `TypeError` traceback;
- `--set train.a.a.…` of 30,000 parts: was a `RecursionError`;
- a JSON key twice in one object: was accepted, the last value winning;
- a JSON `NaN`: was reported at line 1, column 1;
- `mask_zero: "yes"` on a graph's `Embedding`: was read as true (Keras takes any truthy value);
- `task.path: /proc/self/pagemap`: "[Errno 22] Invalid argument", without the file.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from builder_ui import cli
from builder_ui.app import actions
from builder_ui.specs import SpecError, parse_json, parse_yaml
from builder_ui.specs.documents import MAX_SPEC_DEPTH
from tests.builder_ui.engine.quick_runner import QuickRunner

COMPLEX_KEY = "version: 2\nname: x\n? [a, b]\n: 1\n"
SPEC = {
    "version": 2,
    "name": "edges",
    "task": {"type": "long_lag", "lag": 5, "n": 120, "encoding": "ids"},
    "model": {
        "type": "sequence_classifier",
        "embedding_dim": 4,
        "encoder": {"type": "rnn", "units": 4},
    },
    "train": {"epochs": 1},
}


def _only_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (line,) = captured.err.strip().splitlines()
    return line


# --- YAML keys that are lists ---------------------------------------------------------------------


def test_a_yaml_key_that_is_a_list_is_refused_at_its_line():
    with pytest.raises(SpecError) as caught:
        parse_yaml(COMPLEX_KEY)
    assert str(caught.value) == (
        "malformed YAML at line 3, column 3: found a key that is a list (['a', 'b']); "
        "a spec's keys are names"
    )
    with pytest.raises(SpecError, match="found a key that is a mapping"):
        parse_yaml("? {a: 1}\n: 2\n")


def test_a_yaml_key_that_is_a_list_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "complex.yaml"
    path.write_text(COMPLEX_KEY, encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 2
    assert "line 3, column 3: found a key that is a list" in _only_line(capsys)


def test_the_apps_check_and_queue_refuse_a_yaml_key_that_is_a_list(tmp_path):
    result = actions.check(COMPLEX_KEY)
    assert not result.ok
    assert result.problems == [
        (
            "",
            "malformed YAML at line 3, column 3: found a key that is a list (['a', 'b']); "
            "a spec's keys are names",
        )
    ]
    ctx = actions.AppContext(tmp_path / "runs", slots=["CPU"], runner=QuickRunner())
    try:
        with pytest.raises(SpecError, match="found a key that is a list"):
            actions.queue_spec(ctx, COMPLEX_KEY)
        assert ctx.store.list_runs() == []
    finally:
        ctx.close()


# --- --set paths ------------------------------------------------------------------------------


def test_a_set_path_deeper_than_a_spec_nests_is_refused(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    deep = "train" + ".a" * 30_000
    assert cli.main(["validate", str(path), "--set", f"{deep}=1"]) == 2
    line = _only_line(capsys)
    assert "--set train.a.a.a" in line and "30,001 parts" in line
    assert f"at most {MAX_SPEC_DEPTH}" in line and len(line) < 300
    # As deep as a spec may nest is read, and refused as an unknown field.
    assert cli.main(["validate", str(path), "--set", "train.a=1"]) == 2
    assert "train.a" in _only_line(capsys)


# --- JSON: keys twice, NaN ------------------------------------------------------------------------


def test_a_json_key_twice_in_one_object_is_refused_at_the_second():
    text = '{"version": 2, "name": "a",\n "task": {"type": "x"},\n  "name": "b"}'
    with pytest.raises(SpecError) as caught:
        parse_json(text)
    assert str(caught.value) == (
        "malformed JSON at line 3, column 3: duplicate key 'name' (first on line 1)"
    )
    # The same key in two objects, and a key's text inside a string, are not duplicates.
    document = '{"a": {"type": 1}, "b": {"type": 2}, "c": "\\"a\\": 1, \\"a\\": 2"}'
    assert parse_json(document)["b"] == {"type": 2}
    # Escapes name the same key.
    with pytest.raises(SpecError, match=r"duplicate key 'a' \(first on line 1\)"):
        parse_json('{"a": 1, "\\u0061": 2}')


def test_a_json_spec_file_with_a_key_twice_exits_2(tmp_path, capsys):
    path = tmp_path / "dup.json"
    text = json.dumps(SPEC, indent=1)
    path.write_text(text.replace('"version": 2,', '"version": 2,\n "name": "twice",'))
    assert cli.main(["validate", str(path)]) == 2
    assert "line 4, column 2: duplicate key 'name' (first on line 3)" in _only_line(capsys)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_json_nan_is_reported_at_its_line_and_column(constant):
    text = '{"version": 2,\n "train": {"learning_rate": ' + constant + "}}"
    with pytest.raises(SpecError) as caught:
        parse_json(text)
    assert str(caught.value) == (
        f"malformed JSON at line 2, column 29: {constant} is not a JSON number"
    )
    assert parse_json('{"name": "NaN Infinity"}') == {"name": "NaN Infinity"}


# --- a boolean given as a string --------------------------------------------------------------


def _graph(mask_zero: object) -> dict:
    return {
        "version": 2,
        "name": "graph-mask",
        "task": {"type": "long_lag", "lag": 5, "n": 120, "encoding": "ids"},
        "model": {
            "type": "graph",
            "nodes": [
                {"id": "tokens", "layer": "Input"},
                {
                    "id": "embedding",
                    "layer": "Embedding",
                    "params": {"output_dim": 4, "mask_zero": mask_zero},
                    "inputs": {"x": "tokens"},
                },
                {"id": "pool", "layer": "GlobalAveragePooling1D", "inputs": {"x": "embedding"}},
                {"id": "head", "layer": "Output", "inputs": {"x": "pool"}},
            ],
        },
        "train": {"epochs": 1},
    }


@pytest.mark.parametrize("value", ["yes", "true", 1])
def test_a_graph_blocks_boolean_given_as_a_string_or_number_is_refused(tmp_path, capsys, value):
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(_graph(value)), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 2
    line = _only_line(capsys)
    assert "model.nodes[1].params.mask_zero" in line
    assert f"expected True or False, got {value!r}" in line
    result = actions.check(yaml.safe_dump(_graph(value)))  # at the node, for the canvas
    assert not result.ok and result.problems[0][0] == "model.nodes[1]"
    assert "`mask_zero`, expected True or False" in result.problems[0][1]
    assert actions.check(yaml.safe_dump(_graph(True))).ok


# --- a data file that cannot be read ------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/proc/self/pagemap"), reason="Linux's /proc")
@pytest.mark.parametrize(
    "task",
    [
        {"type": "csv_sequences", "path": "/proc/self/pagemap", "inputs": "tokens"},
        {"type": "parallel_text", "path": "/proc/self/pagemap"},
    ],
    ids=["csv_sequences", "parallel_text"],
)
def test_a_proc_file_as_data_is_named_and_read_no_further_than_the_bound(tmp_path, capsys, task):
    # It says it holds 0 bytes, and reading it whole failed ("[Errno 22] Invalid argument").
    model = {"type": "seq2seq"} if task["type"] == "parallel_text" else SPEC["model"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "task": task, "model": model}), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 2
    line = _only_line(capsys)
    assert "task.path: " in line and "/proc/self/pagemap" in line
    assert "more than" in line and "[Errno" not in line


def test_a_data_file_that_cannot_be_read_is_named_with_the_reason(tmp_path, monkeypatch):
    from pathlib import Path

    from builder_ui.builders.data_files import DataFileError, read_text

    path = tmp_path / "data.csv"
    path.write_text("a,b\n", encoding="utf-8")

    def refuse(self, *args, **kwargs):
        raise OSError(22, "Invalid argument")  # as reading /proc/self/pagemap whole did

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(DataFileError) as caught:
        read_text(path, max_bytes=100)
    assert str(caught.value) == f"{path}: cannot be read: Invalid argument"
