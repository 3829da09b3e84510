"""How fast the graph builder's shape check answers: `graph_report` on a 30-block graph.

Issue 15 asks that shape inference answer within 300 ms for a 30-block graph, since the
canvas asks again on every change. Two cases, on the same task (`long_lag`, token ids of
length 50):

- `blocks_4` (the reference): Input, Embedding, LSTM, Output;
- `blocks_30`: Input, Embedding, sinusoidal positions, three rounds of (Transformer
  encoder block, bidirectional LSTM, multi-head attention over it, Add, LayerNormalization,
  Dense, Dropout), then a CEC-LSTM, Bahdanau attention over it, Concatenate, mean pooling,
  Dense and the Output: 30 blocks, every edge's shape computed.

One step is one whole `graph_report(document)` call, as the canvas makes it: the spec
validated, each layer made and called symbolically in a stateless scope, the shapes,
edges and parameter count gathered. The task's data is made once and cached (the first
call, untimed, pays for it), as it is in the app. `graph_shapes` also keeps each node's
outcome by its block, parameters and input shapes, so the cases are:

- `blocks_4` and `blocks_30` *cold*: that cache cleared before every report, so every
  layer is made and called (the first look at a graph);
- `blocks_30_edit`: the 30-block graph after one edit, `dense_2`'s units set to a width
  never asked before, so `dense_2` and the 7 blocks after it are called again (what the
  canvas asks after a person changes a parameter).

The cases alternate in a new random order each round; the table gives the median
milliseconds per report (target for the 30-block cases: under 300 ms) and the ratio to
`blocks_4`.

Run from the repository root:

    python benchmarks/graph_shapes.py           # 21 rounds of 5 reports per case, ~1 minute
    python benchmarks/graph_shapes.py --quick   # smoke run; not a measurement
    python benchmarks/graph_shapes.py --check   # exit 1 if the target is missed

Writes benchmarks/results/graph_shapes.json (every sample and the environment) and
benchmarks/results/graph_shapes.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import _timing

TARGET_MS = 300.0
REFERENCE = "blocks_4"
CASES = ("blocks_4", "blocks_30", "blocks_30_edit")
LABELS = {
    "blocks_4": "4 blocks, cold",
    "blocks_30": "30 blocks, cold",
    "blocks_30_edit": "30 blocks, one edit",
}


@dataclasses.dataclass(frozen=True)
class Settings:
    rounds: int = 21
    steps: int = 5
    seed: int = 0
    quick: bool = False


def _node(node_id, layer, inputs=None, **params):
    found = {"id": node_id, "layer": layer, "params": params}
    if inputs is not None:
        found["inputs"] = inputs if isinstance(inputs, dict) else {"x": inputs}
    return found


def small_graph():
    return [
        _node("tokens", "Input"),
        _node("embedding", "Embedding", "tokens", output_dim=32),
        _node("encoder", "LSTM", "embedding", units=16),
        _node("head", "Output", "encoder"),
    ]


def large_graph():
    """The 30 blocks of the module docstring."""
    nodes = [
        _node("tokens", "Input"),
        _node("embedding", "Embedding", "tokens", output_dim=32, mask_zero=True),
        _node("positions", "SinusoidalPositionalEncoding", "embedding"),
    ]
    x = "positions"
    for index in range(3):
        block, lstm, attention = f"block_{index}", f"lstm_{index}", f"attention_{index}"
        nodes += [
            _node(block, "TransformerEncoderBlock", x, num_heads=4, ff_dim=64),
            _node(lstm, "LSTM", block, units=16, return_sequences=True, bidirectional=True),
            _node(
                attention,
                "MultiHeadAttention",
                {"query": lstm, "value": lstm},
                num_heads=2,
                key_dim=16,
            ),
            _node(f"add_{index}", "Add", {"x": [attention, block]}),
            _node(f"norm_{index}", "LayerNormalization", f"add_{index}"),
            _node(f"dense_{index}", "Dense", f"norm_{index}", units=32, activation="relu"),
            _node(f"dropout_{index}", "Dropout", f"dense_{index}", rate=0.1),
        ]
        x = f"dropout_{index}"
    nodes += [
        _node("carousel", "CECLSTM", x, units=32, forget_gate=True, return_sequences=True),
        _node(
            "bahdanau", "BahdanauAttention", {"query": "carousel", "value": "carousel"}, units=16
        ),
        _node("joined", "Concatenate", {"x": ["bahdanau", x]}),
        _node("pool", "MaskedMeanPooling", "joined"),
        _node("hidden", "Dense", "pool", units=16, activation="relu"),
        _node("head", "Output", "hidden"),
    ]
    return nodes


def document(nodes):
    return {
        "version": 2,
        "name": "graph-shapes-benchmark",
        "task": {"type": "long_lag", "lag": 50, "n": 200, "encoding": "ids"},
        "model": {"type": "graph", "nodes": nodes},
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Time graph_report on a 4- and a 30-block graph.")
    parser.add_argument("--rounds", type=int, default=21, help="samples per case (default 21)")
    parser.add_argument("--steps", type=int, default=5, help="reports per sample (default 5)")
    _timing.add_seed_argument(parser)
    _timing.add_output_arguments(
        parser, "graph_shapes", quick_help="smoke run: 2 rounds of 1 report"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.steps = 2, 1
    else:
        _timing.require_rounds(parser, args.rounds)
    args.settings = Settings(args.rounds, args.steps, args.seed, args.quick)
    return args


def measure(settings, log=print):
    """Warm up and time the cases; return the run record (a JSON-able dict)."""
    import itertools

    import keras

    from builder_ui.builders import graph_shapes
    from builder_ui.builders.graph_model import graph_report

    documents = {"blocks_4": document(small_graph()), "blocks_30": document(large_graph())}
    reports = {}
    widths = itertools.count(33)  # a width never asked before: the edit is never cached
    edited = document(large_graph())
    dense = next(node for node in edited["model"]["nodes"] if node["id"] == "dense_2")

    def checked(case, report):
        if report.errors:
            raise RuntimeError(f"{case}: the graph has errors: {report.errors}")
        reports[case] = report

    edit_cache = graph_shapes.OUTCOMES  # the edit's, kept from report to report

    def cold(case):
        def run():
            # An empty cache of its own: every layer made and called again.
            graph_shapes.OUTCOMES = graph_shapes._OutcomeCache(graph_shapes.CACHE_SIZE)
            checked(case, graph_report(documents[case]))

        return run

    def edit():
        graph_shapes.OUTCOMES = edit_cache
        dense["params"]["units"] = next(widths)  # dense_2 and the 7 blocks after it change
        checked("blocks_30_edit", graph_report(edited))

    steps = {"blocks_4": cold("blocks_4"), "blocks_30": cold("blocks_30"), "blocks_30_edit": edit}
    first = {}
    for case, run in steps.items():
        first[case] = _timing.warm_up(run, 2)
        log(f"warmed up {case:<15} first report {1e3 * first[case]:8.1f} ms")
    timing = _timing.time_rounds(steps, settings, settings.steps, log)
    results = []
    for case in CASES:
        wall_figures, cpu_figures = _timing.against_reference(
            timing.wall[case], timing.cpu[case], timing.wall[REFERENCE], timing.cpu[REFERENCE]
        )
        summary = _timing.milliseconds(_timing.summarize(timing.wall[case]))
        is_target = case != REFERENCE
        results.append(
            {
                "key": case,
                "label": LABELS[case],
                "blocks": len(documents[case.split("_edit")[0]]["model"]["nodes"]),
                "parameters": reports[case].params,
                "first_report_ms": round(1e3 * first[case], 1),
                "ms_per_report": summary,
                **wall_figures,
                "target_ms": TARGET_MS if is_target else None,
                "target": None,
                "passed": summary["median"] < TARGET_MS if is_target else None,
                **cpu_figures,
            }
        )
    environment = _timing.timing_environment(keras.backend.backend(), timing.load_before)
    return {
        "benchmark": "graph_shapes",
        "description": (
            "Milliseconds per graph_report call (validation, symbolic layer calls in a "
            "stateless scope, shapes, edges, parameter count): a 4- and a 30-block graph with "
            "nothing cached, and the 30-block graph after a one-parameter edit; interleaved "
            "rounds."
        ),
        "reference": REFERENCE,
        "settings": dataclasses.asdict(settings),
        **_timing.record_outcome(environment, timing, results),
    }


def table(record):
    headers = (
        "case",
        "blocks",
        "parameters",
        "ms/report (median)",
        "IQR (ms)",
        "min (ms)",
        "first (ms)",
        "× 4 blocks",
        "CPU ×",
        "target",
        "result",
    )
    rows = []
    for entry in record["results"]:
        ms = entry["ms_per_report"]
        target = "reference" if entry["target_ms"] is None else f"< {entry['target_ms']:.0f} ms"
        rows.append(
            (
                f"`{entry['label']}`",
                entry["blocks"],
                f"{entry['parameters']:,}",
                f"{ms['median']:.1f}",
                f"{ms['q1']:.1f}–{ms['q3']:.1f}",
                f"{ms['min']:.1f}",
                f"{entry['first_report_ms']:.0f}",
                f"{entry['ratio']:.2f}×",
                f"{entry['cpu_ratio']:.2f}×",
                target,
                _timing.verdict(entry["passed"]),
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record):
    return [
        f"{'PASS' if entry['passed'] else 'FAIL'}: graph_report, {entry['label']}, in "
        f"{entry['ms_per_report']['median']:.0f} ms (median; target < {entry['target_ms']:.0f} ms)"
        for entry in record["results"]
        if entry["target_ms"] is not None
    ]


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    lines = _timing.markdown_preamble("Graph builder: shape check of a 30-block graph", record)
    lines += [
        "- Task: `long_lag` token ids of length 50; `blocks_4` is Input, Embedding, LSTM, "
        "Output; `blocks_30` the 30-block graph of the script's docstring (Transformer "
        "blocks, bidirectional LSTMs, attention, Add, norms, a CEC-LSTM, Bahdanau attention, "
        "Concatenate, pooling). *cold*: the per-node outcome cache cleared before each report; "
        "*one edit*: `dense_2`'s units changed to a new width, so 8 of the 30 blocks are "
        "called again.",
        "- One step: `graph_report(document)`, as the canvas calls it on every change (spec "
        "validation, every layer made and called on symbolic tensors in a stateless scope "
        "that allocates no weights); the task's data made once and cached, as in the app.",
        f"- Timing: {_timing.plural(settings['rounds'], 'round')} of "
        f"{_timing.plural(settings['steps'], 'report')} per case, in a new random order each "
        "round, after three untimed reports per case.",
        f"- {_timing.keras_on_backend(environment)}.",
        _timing.machine_line(environment),
    ]
    note = (
        "*first*: the first report of the process, which also imports the layers and makes "
        "the task's data. CPU × is the ratio in CPU time of the process, which waiting for a "
        "core on a busy machine inflates less than wall time."
    )
    return _timing.markdown_document(lines, [table(record), note], verdicts(record))


def main(argv=None):
    args = parse_args(argv)
    return _timing.measure_and_report(
        args, measure, stem="graph_shapes", markdown=markdown, tables=(table,), verdicts=verdicts
    )


if __name__ == "__main__":
    sys.exit(main())
