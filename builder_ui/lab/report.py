"""The lab's report: one Markdown file with PNG figures, and the numbers as JSON.

    <out_dir>/
      README.md        the report (GitHub shows it when the directory is opened)
      results.json     every experiment's result, as data
      figures/*.png    the figures

Each experiment's section gives the papers' claim, what was measured, the
verdict and the rule it was judged by, the figure, the tables, the runs in
the store (by name, id and sweep) and the sizes it ran at. Results of
experiments not run in this invocation are kept from `results.json`, so
`keras-seq lab --only 3` refreshes one section of an existing report.
Both files are written to a temporary name and renamed into place.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from builder_ui import files
from builder_ui.lab.common import ExperimentResult

REPORT_FILE = "README.md"
RESULTS_FILE = "results.json"
RESULTS_VERSION = 1


def load_results(out_dir: str | os.PathLike) -> dict[str, Any]:
    """The `results.json` of a report directory (an empty document when there is none)."""
    path = Path(out_dir) / RESULTS_FILE
    if not path.is_file():
        return {"version": RESULTS_VERSION, "experiments": {}, "invocation": None}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(
            f"{str(path)!r} is not a lab results file ({error}); remove it or choose another --out"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("experiments"), dict):
        raise ValueError(
            f"{str(path)!r} is not a lab results file; remove it or choose another --out"
        )
    return data


def load_experiment_results(out_dir: str | os.PathLike) -> list[ExperimentResult]:
    """The results stored in a report directory, by experiment number."""
    out_dir = Path(out_dir)
    data = load_results(out_dir)
    return [
        ExperimentResult.from_dict(entry, out_dir=out_dir)
        for _, entry in sorted(data["experiments"].items(), key=lambda item: int(item[0]))
    ]


def write_report(
    out_dir: str | os.PathLike,
    results: Sequence[ExperimentResult],
    *,
    lab_seconds: float | None = None,
    lab_numbers: Iterable[int] | None = None,
) -> Path:
    """Merge `results` into `<out_dir>/results.json` and rewrite `<out_dir>/README.md`.

    Args:
        out_dir: The report directory.
        results: The experiments just run (they replace earlier results with
            the same number).
        lab_seconds: Duration of the whole invocation, stated in the report.
        lab_numbers: The experiments that invocation ran.

    Returns:
        The path of the report.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = load_results(out_dir)
    for result in results:
        data["experiments"][str(result.number)] = result.to_dict()
    if lab_seconds is not None:
        earlier = data.get("invocations") or (
            [data["invocation"]] if data.get("invocation") else []
        )
        modes = sorted({r.mode for r in results})
        invocation = {
            "experiments": sorted(lab_numbers or [r.number for r in results]),
            "seconds": round(lab_seconds, 1),
            "mode": modes[0] if len(modes) == 1 else "mixed",
            "finished": time.time(),
        }
        data["invocation"] = invocation
        # An earlier invocation stays listed while a later one has not rerun all its experiments.
        history = [*earlier, invocation]

        def still_shown(entry: Mapping[str, Any], number: int) -> bool:
            return not any(
                later["finished"] > entry["finished"] and number in later["experiments"]
                for later in history
            )

        data["invocations"] = [
            entry for entry in history if any(still_shown(entry, n) for n in entry["experiments"])
        ]
    data["version"] = RESULTS_VERSION
    files.write_text(out_dir / RESULTS_FILE, json.dumps(data, indent=1, allow_nan=False) + "\n")
    stored = [
        ExperimentResult.from_dict(entry, out_dir=out_dir)
        for _, entry in sorted(data["experiments"].items(), key=lambda item: int(item[0]))
    ]
    path = out_dir / REPORT_FILE
    files.write_text(path, markdown(stored, data.get("invocations") or []))
    return path


# ---------------------------------------------------------------------------------------------
# Markdown


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(timestamp)) if timestamp else "?"


def duration(seconds: float) -> str:
    """`42 s`, `3 min 05 s` or `1 h 02 min`."""
    seconds = float(seconds or 0)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def cell(value: Any) -> str:
    """A table cell: numbers to 4 significant digits, None as a dash, `|` escaped."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.2e}"
        return f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """A GitHub Markdown table; numeric columns right-aligned."""

    def numeric(column: str) -> bool:
        values = [row.get(column) for row in rows if row.get(column) is not None]
        return bool(values) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        )

    header = "| " + " | ".join(cell(c) for c in columns) + " |"
    rule = "|" + "|".join("---:" if numeric(c) else ":---" for c in columns) + "|"
    body = ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def _anchor(result: ExperimentResult) -> str:
    text = f"{result.number}-{result.title}".lower()
    return "".join(ch if ch.isalnum() or ch == "-" else "-" if ch == " " else "" for ch in text)


def markdown(
    results: Sequence[ExperimentResult], invocations: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The whole report as Markdown; `invocations` are the `keras-seq lab` runs it comes from."""
    lines = [
        "# The bottleneck lab",
        "",
        "Each structural limit of sequence models, and the design that removed it, measured on "
        "data keras_seq generates, beside the numbers the papers reported. Written by "
        "`keras-seq lab`; rerun it rather than editing this file. Every trained model is a run "
        "in the run store (`keras-seq runs --sweep ID` lists an experiment's runs, and the "
        "app's Compare tab shows them).",
        "",
    ]
    quick = [r.number for r in results if r.mode == "quick"]
    if invocations:
        lines.append("Made by these runs of the lab:")
        lines.append("")
        for invocation in invocations:
            numbers = list(invocation.get("experiments", []))
            which = (
                f"experiment {numbers[0]}"
                if len(numbers) == 1
                else f"experiments {', '.join(map(str, numbers))}"
            )
            lines.append(
                f"- `keras-seq lab`, {which}, {invocation.get('mode')} sizes: "
                f"**{duration(invocation['seconds'])}** in all, finished "
                f"{_when(invocation.get('finished', 0))}."
            )
        lines.append("")
    if quick:
        lines += [
            f"> **Quick mode** for experiment(s) {', '.join(map(str, quick))}: small sizes, meant "
            "to check that the lab works, not to measure. Run `keras-seq lab` (without "
            "`--quick`) for the full sizes.",
            "",
        ]
    lines += [
        "| # | experiment | verdict | mode | time | device |",
        "|---:|:---|:---|:---|---:|:---|",
    ]
    for r in results:
        lines.append(
            f"| {r.number} | [{r.title}](#{_anchor(r)}) | **{r.verdict}** | {r.mode} | "
            f"{duration(r.seconds)} | {cell(r.device or '—')} |"
        )
    lines.append("")
    for r in results:
        lines += _section(r)
    return "\n".join(lines).rstrip() + "\n"


def _section(r: ExperimentResult) -> list[str]:
    lines = [f"## {r.number}. {r.title}", ""]
    lines += [f"**The papers' claim.** {r.claim}", ""]
    lines += [f"**Measured.** {r.finding}", ""]
    lines += [f"**Verdict: {r.verdict}.**" + (f" Rule: {r.rule}" if r.rule else ""), ""]
    for figure in r.figures:
        lines += [f"![Experiment {r.number}: {r.title}]({figure})", ""]
    for table in r.tables:
        if table.get("title"):
            lines += [f"*{table['title']}*", ""]
        lines += [markdown_table(table["columns"], table["rows"]), ""]
    if r.notes:
        lines += [f"- {note}" for note in r.notes]
        lines.append("")
    details = [
        f"{r.mode} sizes",
        f"{duration(r.seconds)}",
        f"finished {_when(r.finished)}",
    ]
    if r.device:
        details.append(r.device)
    if r.settings:
        details.append(", ".join(f"{k} {_setting(v)}" for k, v in r.settings.items()))
    lines += [f"<sub>Ran at: {'; '.join(details)}.</sub>", ""]
    if r.run_ids:
        lines += [
            f"<sub>Runs: {len(r.run_ids)} in sweep `{r.sweep_id}` "
            f"(`keras-seq runs --sweep {r.sweep_id}`).</sub>",
            "",
        ]
    return lines


def _setting(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "/".join(map(str, value))
    return str(value)
