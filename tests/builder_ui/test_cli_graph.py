"""`keras-seq graph SPEC`: the spec with its `model:` as the graph of blocks it builds.

It is the app's "Open as graph" on the command line: the same nodes, and a spec that
validates. A spec whose model is a graph already exits 2 naming `model.type`; an
existing `--out` is refused unless `--force`.
"""

from __future__ import annotations

import yaml

from builder_ui import cli
from builder_ui.app.actions import canvas
from builder_ui.builders import load_spec, presets
from builder_ui.specs import parse_yaml

EXAMPLES = presets.SPECS_DIR


def graph_of(capsys, *arguments: str) -> dict:
    assert cli.main(["graph", *arguments]) == 0, capsys.readouterr().err
    return yaml.safe_load(capsys.readouterr().out)


def test_the_gru_example_becomes_its_layers_one_node_each(capsys):
    document = graph_of(capsys, str(EXAMPLES / "gru.yaml"))
    original = yaml.safe_load((EXAMPLES / "gru.yaml").read_text(encoding="utf-8"))
    nodes = document["model"]["nodes"]
    assert [(node["id"], node["layer"]) for node in nodes] == [
        ("sequence", "Input"),
        ("token_embedding", "Embedding"),
        ("bidirectional_0", "GRU"),
        ("classifier", "Output"),
    ]
    assert nodes[1]["params"] == {"output_dim": 8}  # the spec's embedding_dim
    assert nodes[2]["params"]["units"] == 16 and nodes[2]["params"]["bidirectional"] is True
    assert document["task"] == load_spec(original).task.model_dump(mode="json")
    assert load_spec(document).model.type == "graph"


def test_it_is_the_apps_open_as_graph(capsys):
    text = (EXAMPLES / "vit.yaml").read_text(encoding="utf-8")
    opened, checked = canvas.open_as_graph(text)
    assert checked.ok, checked.problems
    document = graph_of(capsys, str(EXAMPLES / "vit.yaml"))
    assert document["model"]["nodes"] == parse_yaml(opened)["model"]["nodes"]


def test_out_writes_the_file_and_refuses_to_replace_it_without_force(tmp_path, capsys):
    out = tmp_path / "graph.yaml"
    spec = str(EXAMPLES / "transformer.yaml")
    assert cli.main(["graph", spec, "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["model"]["type"] == "graph"
    out.write_text("mine\n", encoding="utf-8")
    assert cli.main(["graph", spec, "--out", str(out)]) == 2
    assert "exists; pass --force to replace it" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert cli.main(["graph", spec, "--out", str(out), "--force"]) == 0
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["model"]["type"] == "graph"


def test_a_graph_already_exits_2_naming_model_type(tmp_path, capsys):
    graph = tmp_path / "graph.yaml"
    assert cli.main(["graph", str(EXAMPLES / "gru.yaml"), "--out", str(graph)]) == 0
    capsys.readouterr()
    assert cli.main(["graph", str(graph)]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line == "keras-seq graph: error: model.type: the model is a graph already"
    assert captured.out == ""


def test_a_sweep_is_left_out_with_a_note(capsys):
    assert cli.main(["graph", str(EXAMPLES / "recurrent_cells_sweep.yaml")]) == 0
    captured = capsys.readouterr()
    assert "sweep" not in yaml.safe_load(captured.out)
    assert "the sweep was left out" in captured.err
