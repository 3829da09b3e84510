"""Reading a spec document is bounded before it is done: no input may freeze or exhaust the host."""

from __future__ import annotations

import pytest

from builder_ui import cli
from builder_ui.specs import SpecError, parse_json, parse_yaml, shown
from builder_ui.specs.documents import MAX_SPEC_DEPTH, MAX_SPEC_NODES
from tests.allocation import allocates_little


def billion_laughs(levels: int = 9) -> str:
    """A few hundred bytes whose aliases expand to 9 ** levels values."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(60)  # a hang guard: without the bound this runs for minutes
def test_an_alias_bomb_is_refused_before_it_is_expanded():
    text = billion_laughs()
    assert len(text) < 600
    with allocates_little(), pytest.raises(SpecError) as caught:
        parse_yaml(text)
    message = str(caught.value)
    assert message == (
        f"more than {MAX_SPEC_NODES:,} values once its aliases are expanded; "
        "a spec holds a few hundred"
    )


def test_aliases_that_stay_small_still_work():
    assert parse_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    # Just under the limit: 9 ** 5 = 59,049 values.
    assert len(parse_yaml(billion_laughs(4))["a4"]) == 9


def nested(kind: str, depth: int) -> str:
    if kind == "flow list":
        return "[" * depth + "]" * depth
    if kind == "block map":
        return "".join(" " * level + "a:\n" for level in range(depth)) + " " * depth + "a: 1\n"
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.timeout(60)
@pytest.mark.parametrize("depth", [5_000, 100_000])
@pytest.mark.parametrize("kind", ["flow list", "block map", "json"])
def test_deep_nesting_is_refused_with_one_line(kind, depth):
    text = nested(kind, depth if kind != "block map" else min(depth, 5_000))
    parse = parse_json if kind == "json" else parse_yaml
    with allocates_little(), pytest.raises(SpecError) as caught:
        parse(text)
    assert str(caught.value) == (
        f"nested more than {MAX_SPEC_DEPTH} levels deep; a spec is a few levels of mappings "
        "and lists"
    )


@pytest.mark.parametrize("kind", ["flow list", "block map", "json"])
def test_nesting_up_to_the_limit_is_read(kind):
    parse = parse_json if kind == "json" else parse_yaml
    assert parse(nested(kind, MAX_SPEC_DEPTH - 1)) is not None


def test_a_json_string_with_brackets_is_not_nesting():
    text = '{"a": "' + "[" * 1000 + '\\"{{"}'
    assert parse_json(text) == {"a": "[" * 1000 + '"{{'}


@pytest.mark.timeout(60)
def test_a_huge_value_is_shown_without_being_rendered_whole():
    value = list(range(1_000_000))
    with allocates_little():
        text = shown(value)
    assert text.startswith("[0, 1, 2, 3") and len(text) <= 80


@pytest.mark.timeout(60)
def test_the_cli_refuses_an_alias_bomb_with_exit_2_and_one_message(tmp_path, capsys):
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"keras-seq validate: error: {path}: more than {MAX_SPEC_NODES:,} values once its "
        "aliases are expanded; a spec holds a few hundred"
    )
