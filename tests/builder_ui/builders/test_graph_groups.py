"""Groups of a graph spec and "repeat ×N": the expansion's rules, its refusals, and a real build.

The expected expansions are written out by hand, node by node; the parameter count of a
repeated group is checked against the same graph written with explicit copies, and
against a sum computed from a one-block build.
"""

from __future__ import annotations

import copy

import keras
import pytest

from builder_ui.builders import load_spec, prepare
from builder_ui.builders.graph_groups import copy_id, expand, expansion, problems
from builder_ui.builders.graph_model import graph_report
from builder_ui.builders.graph_params import MAX_NODES, plain_nodes
from builder_ui.results.model_source import model_source
from builder_ui.specs import SpecError
from tests.builder_ui.builders.test_graph_seq2seq import node

TOKENS = {"type": "long_lag", "lag": 6, "n": 120, "encoding": "ids", "num_distractors": 4}


def group(group_id, members, repeat=1, **extra):
    return {"id": group_id, "nodes": list(members), "repeat": repeat, **extra}


def document(nodes, groups=None):
    model = {"type": "graph", "nodes": copy.deepcopy(nodes)}
    if groups is not None:
        model["groups"] = copy.deepcopy(groups)
    return {
        "version": 2,
        "name": "groups-test",
        "task": TOKENS,
        "model": model,
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
    }


def wiring(nodes):
    """Each node as `id: {port: sources}`, in order: what the tables compare."""
    return [(n["id"], n.get("inputs", {})) for n in nodes]


# The expansion, rule by rule ----------------------------------------------------------------

CHAIN = [
    node("tokens", "Input"),
    node("embedding", "Embedding", "tokens", output_dim=8),
    node("block", "TransformerEncoderBlock", "embedding", num_heads=2, ff_dim=16),
    node("pool", "GlobalAveragePooling1D", "block"),
    node("head", "Output", "pool"),
]


def test_copy_k_of_a_member_is_named_m_k_and_copy_1_is_the_member():
    assert [copy_id("block", k) for k in (1, 2, 3)] == ["block", "block_2", "block_3"]


def test_an_outside_edge_into_x_is_chained_and_the_exit_is_rewired_to_the_last_copy():
    expected = [
        ("tokens", {}),
        ("embedding", {"x": "tokens"}),
        ("block", {"x": "embedding"}),  # copy 1 reads the outside source
        ("block_2", {"x": "block"}),  # copy k reads copy k-1's exit
        ("block_3", {"x": "block_2"}),
        ("pool", {"x": "block_3"}),  # the outside reader reads the last copy
        ("head", {"x": "pool"}),
    ]
    expanded = expand(CHAIN, [group("stack", ["block"], 3)])
    assert wiring(expanded) == expected
    copies = {n["id"]: (n["layer"], n.get("params")) for n in expanded}
    assert copies["block_3"] == ("TransformerEncoderBlock", {"num_heads": 2, "ff_dim": 16})


def test_an_outside_edge_into_another_port_is_shared_by_every_copy():
    nodes = [
        node("tokens", "Input"),
        node("embedding", "Embedding", "tokens", output_dim=8),
        node("encoder", "TransformerEncoderBlock", "embedding", num_heads=2, ff_dim=16),
        node(
            "decoder",
            "TransformerDecoderBlock",
            {"x": "embedding", "context": "encoder"},
            num_heads=2,
            ff_dim=16,
        ),
        node("pool", "GlobalAveragePooling1D", "decoder"),
        node("head", "Output", "pool"),
    ]
    expected = [
        ("decoder", {"x": "embedding", "context": "encoder"}),
        ("decoder_2", {"x": "decoder", "context": "encoder"}),
        ("decoder_3", {"x": "decoder_2", "context": "encoder"}),
        ("pool", {"x": "decoder_3"}),
    ]
    assert wiring(expand(nodes, [group("decoders", ["decoder"], 3)]))[3:7] == expected


def test_in_group_edges_are_per_copy_and_a_variadic_x_chains_only_its_outside_entries():
    nodes = [
        node("tokens", "Input"),
        node("embedding", "Embedding", "tokens", output_dim=8),
        node("ff", "Dense", "embedding", units=8),
        node("residual", "Add", {"x": ["embedding", "ff"]}),
        node("norm", "LayerNormalization", "residual"),
        node("pool", "GlobalAveragePooling1D", "norm"),
        node("head", "Output", "pool"),
    ]
    expected = [
        ("tokens", {}),
        ("embedding", {"x": "tokens"}),
        ("ff", {"x": "embedding"}),
        ("residual", {"x": ["embedding", "ff"]}),
        ("norm", {"x": "residual"}),
        ("ff_2", {"x": "norm"}),
        ("residual_2", {"x": ["norm", "ff_2"]}),  # outside entry chained, in-group per copy
        ("norm_2", {"x": "residual_2"}),
        ("pool", {"x": "norm_2"}),
        ("head", {"x": "pool"}),
    ]
    found = expansion(nodes, [group("layer", ["ff", "residual", "norm"], 2)])
    assert wiring(found.nodes) == expected
    assert found.exits == {"layer": "norm_2"}
    assert found.copies["residual"] == ["residual", "residual_2"]
    assert found.origin[5:8] == [(2, 2), (3, 2), (4, 2)]


def test_a_group_feeding_another_group_feeds_its_first_copy_from_its_own_last_copy():
    nodes = [
        node("tokens", "Input"),
        node("embedding", "Embedding", "tokens", output_dim=8),
        node("a", "Dense", "embedding", units=8),
        node("b", "Dense", "a", units=8),
        node("pool", "GlobalAveragePooling1D", "b"),
        node("head", "Output", "pool"),
    ]
    expected = [
        ("a", {"x": "embedding"}),
        ("a_2", {"x": "a"}),
        ("b", {"x": "a_2"}),
        ("b_2", {"x": "b"}),
        ("b_3", {"x": "b_2"}),
        ("pool", {"x": "b_3"}),
    ]
    groups = [group("first", ["a"], 2), group("second", ["b"], 3)]
    assert wiring(expand(nodes, groups))[2:8] == expected


def test_a_group_repeated_once_changes_nothing():
    nodes = plain_nodes(load_spec(document(CHAIN)).model)
    for groups in ([], [group("stack", ["block"])], [group("all", ["embedding", "block"], 1)]):
        assert expand(nodes, groups) == nodes
        assert plain_nodes(load_spec(document(CHAIN, groups)).model) == nodes


def test_an_expanded_spec_is_written_as_given_and_without_groups_as_before():
    assert "groups" not in load_spec(document(CHAIN)).to_dict()["model"]
    written = load_spec(document(CHAIN, [group("stack", ["block"], 3)])).to_dict()["model"]
    assert written["groups"] == [group("stack", ["block"], 3, collapsed=False)]
    assert [n["id"] for n in written["nodes"]] == [n["id"] for n in CHAIN]


# Every refusal, at its path -------------------------------------------------------------------

LONG = [
    node("tokens", "Input"),
    node("embedding", "Embedding", "tokens", output_dim=8),
    node("a", "Dense", "embedding", units=8),
    node("b", "Dense", "a", units=8),
    node("c", "Dense", "b", units=8),
    node("d", "Dense", "c", units=8),
    node("pool", "GlobalAveragePooling1D", "d"),
    node("head", "Output", "pool"),
]
ATTENTION = [
    node("tokens", "Input"),
    node("embedding", "Embedding", "tokens", output_dim=8),
    node(
        "attention",
        "MultiHeadAttention",
        {"query": "embedding", "value": "embedding"},
        num_heads=2,
        key_dim=4,
    ),
    node("pool", "GlobalAveragePooling1D", "attention"),
    node("head", "Output", "pool"),
]
TWO_EXITS = [
    node("tokens", "Input"),
    node("embedding", "Embedding", "tokens", output_dim=8),
    node("a", "Dense", "embedding", units=8),
    node("b", "Dense", "a", units=8),
    node("joined", "Add", {"x": ["a", "b"]}),
    node("pool", "GlobalAveragePooling1D", "joined"),
    node("head", "Output", "pool"),
]
TAKEN = [*CHAIN[:3], node("block_2", "Dense", "block", units=8), *CHAIN[3:]]
TAKEN[4] = node("pool", "GlobalAveragePooling1D", "block_2")


@pytest.mark.parametrize(
    ("nodes", "groups", "path", "message"),
    [
        (CHAIN, [group("g", ["block", "nope"])], "model.groups[0].nodes[1]",
         "group g names no node 'nope'"),
        (CHAIN, [group("g", ["block"]), group("h", ["embedding", "block"])],
         "model.groups[1].nodes[1]",
         "node 'block' is in group g already; a node is in one group at most"),
        (CHAIN, [group("g", ["block", "block"])], "model.groups[0].nodes[1]",
         "node 'block' is twice in this group; a node is in one group at most"),
        (CHAIN, [group("g", ["block"]), group("g", ["embedding"])], "model.groups[1].id",
         "duplicate group id 'g' (also group 0)"),
        (CHAIN, [group("block", ["block"])], "model.groups[0].id",
         "group id 'block' is also a node's id; give the group a name of its own"),
        (CHAIN, [group("Stack", ["block"])], "model.groups[0].id",
         "expected a string matching ^[a-z][a-z0-9_]{0,63}$, got 'Stack'"),
        (CHAIN, [group("g", [])], "model.groups[0].nodes", "expected at least 1 item(s), got []"),
        (CHAIN, [group("g", ["block"], 0)], "model.groups[0].repeat",
         "expected an integer ≥ 1, got 0"),
        (CHAIN, [group("g", ["block"], 65)], "model.groups[0].repeat",
         "expected an integer ≤ 64, got 65"),
        (LONG, [group("g", ["a", "b", "c", "d"], 64)], "model.groups[0].repeat",
         f"group g repeated 64 times makes the graph 260 nodes or more, more than {MAX_NODES}"),
        (TAKEN, [group("g", ["block"], 3)], "model.groups[0].repeat",
         "group g repeated 3 times names its copies block_2, ids taken already; rename those "
         "nodes or the members"),
        (ATTENTION, [group("g", ["attention"], 2)], "model.groups[0]",
         "nothing enters the group's port x to chain its copies: no node outside group g "
         "feeds the x port of attention"),
        (CHAIN, [group("g", ["head"], 2)], "model.groups[0]",
         "group g leads nowhere: no node outside it reads head; connect its exit"),
        (TWO_EXITS, [group("g", ["a", "b"], 2)], "model.groups[0]",
         "group g repeated 2 times has several exits (a, b); only one member may feed nodes "
         "outside the group"),
    ],
)  # fmt: skip
def test_a_bad_group_is_refused_at_its_path(nodes, groups, path, message):
    with pytest.raises(SpecError) as raised:
        load_spec(document(nodes, groups))
    assert (path, message) in raised.value.problems


def test_groups_repeated_once_may_have_several_exits_or_none():
    assert load_spec(document(TWO_EXITS, [group("g", ["a", "b"])])).model.groups
    assert load_spec(document(CHAIN, [group("g", ["head"])])).model.groups
    assert problems(ATTENTION, [group("g", ["attention"])]) == []


def test_a_malformed_group_is_reported_under_spec_and_the_nodes_walked_unexpanded():
    report = graph_report(document(CHAIN, [group("g", ["block"], 0)]), gpu=False)
    assert "model.groups[0].repeat" in report.errors["spec"]
    assert report.shapes["pool"] == "(None, 8)"
    assert report.groups == {}
    refused = graph_report(document(CHAIN, [group("g", ["head"], 2)]), gpu=False)
    assert "group g leads nowhere" in refused.errors["spec"]
    assert refused.groups == {"g": {"shape": None, "params": None}}


def test_a_copys_error_is_its_members_and_says_which_copy():
    nodes = [
        *CHAIN[:2],
        node("block", "TransformerEncoderBlock", "embedding", num_heads=4, ff_dim=16),
        node("narrow", "Dense", "block", units=6),
        node("pool", "GlobalAveragePooling1D", "narrow"),
        node("head", "Output", "pool"),
    ]
    spec = document(nodes, [group("layer", ["block", "narrow"], 2)])
    message = graph_report(spec, gpu=False).errors["block"]
    assert message.startswith("copy 2: block_2 (TransformerEncoderBlock) on x (None, 6, 6): ")
    with pytest.raises(SpecError) as raised:
        prepare(spec)
    assert raised.value.problems[0][0] == "model.nodes[2].inputs.x"
    assert raised.value.problems[0][1].startswith("copy 2: ")


# A real build: Input → Embedding → [TransformerEncoderBlock] ×3 → pooling → Output -----------

EXPLICIT = [
    *CHAIN[:3],
    node("block_2", "TransformerEncoderBlock", "block", num_heads=2, ff_dim=16),
    node("block_3", "TransformerEncoderBlock", "block_2", num_heads=2, ff_dim=16),
    node("pool", "GlobalAveragePooling1D", "block_3"),
    node("head", "Output", "pool"),
]
STACKED = document(CHAIN, [group("encoder_stack", ["block"], 3)])


def built(spec):
    prepared = prepare(spec)
    assert prepared.builder.check(prepared.spec.model, prepared.task) == []
    keras.utils.set_random_seed(0)
    return prepared.builder.build(prepared.spec.model, prepared.task)


def test_a_repeated_block_builds_the_explicit_stack_with_its_parameters():
    load_spec(STACKED)  # valid
    repeated, explicit, single = built(STACKED), built(document(EXPLICIT)), built(document(CHAIN))
    names = ["tokens", "embedding", "block", "block_2", "block_3", "pool", "head"]
    assert [layer.name for layer in repeated.layers] == names
    assert [layer.name for layer in explicit.layers] == names
    assert repeated.count_params() == explicit.count_params()
    one = {name: single.get_layer(name).count_params() for name in ("embedding", "block", "head")}
    assert repeated.count_params() == one["embedding"] + 3 * one["block"] + one["head"]
    assert repeated.count_params() > single.count_params()


def test_the_exported_code_of_a_repeated_block_rebuilds_the_expanded_model():
    model = built(STACKED)
    namespace = {}
    exec(compile(model_source(model), "stacked.py", "exec"), namespace)
    rebuilt = namespace["build_model"]()
    assert rebuilt.count_params() == model.count_params()
    assert [layer.name for layer in rebuilt.layers] == [layer.name for layer in model.layers]


def test_the_memory_estimate_counts_every_copy_at_its_members_field():
    prepared = prepare(STACKED)
    parts = prepared.builder.estimate(prepared.spec.model, prepared.task)
    fields = {part.name: part.field for part in parts}
    assert fields["block_3"] == fields["block"] == "model.nodes[2].params"
    single = prepare(document(CHAIN))
    one = single.builder.estimate(single.spec.model, single.task)
    assert sum(p.parameters for p in parts) == sum(p.parameters for p in one) + 2 * next(
        p.parameters for p in one if p.name == "block"
    )


def test_the_report_is_keyed_by_the_specs_ids_and_sums_the_groups_copies():
    single = built(document(CHAIN))
    block = single.get_layer("block").count_params()
    report = graph_report(STACKED, gpu=False)
    assert report.errors == {}
    assert list(report.shapes) == ["tokens", "embedding", "block", "pool", "head"]
    assert report.params == built(STACKED).count_params()
    assert report.groups == {"encoder_stack": {"shape": "(None, 6, 8)", "params": 3 * block}}
    assert report.blocks["block"]["params"] == 3 * block  # all its copies
    assert set(report.blocks) == {"tokens", "embedding", "block", "pool", "head"}
    assert [(e["source"], e["target"], e["port"]) for e in report.edges] == [
        ("tokens", "embedding", "x"),
        ("embedding", "block", "x"),
        ("block", "pool", "x"),
        ("pool", "head", "x"),
    ]
    assert report.to_json()["groups"] == report.groups


def test_an_edge_from_a_groups_exit_carries_the_last_copys_shape():
    nodes = [
        *CHAIN[:2],
        node("wider", "Concatenate", {"x": ["embedding", "embedding"]}),
        node("pool", "GlobalAveragePooling1D", "wider"),
        node("head", "Output", "pool"),
    ]
    report = graph_report(document(nodes, [group("doubling", ["wider"], 3)]), gpu=False)
    assert report.errors == {}
    assert report.shapes["wider"] == "(None, 6, 16)"  # copy 1
    shapes = {(e["source"], e["target"]): e["shape"] for e in report.edges}
    assert shapes[("embedding", "wider")] == "(None, 6, 8)"
    assert shapes[("wider", "pool")] == "(None, 6, 64)"  # 8 → 16 → 32 → 64
    assert report.groups["doubling"] == {"shape": "(None, 6, 64)", "params": 0}
