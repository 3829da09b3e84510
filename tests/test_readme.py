"""The README shows Python examples. They run, in order, in tests/docs/test_snippets.py."""

from pathlib import Path

from tests.docs.snippets import runnable_python_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    """The README's python blocks, but for a section that a test of its own runs."""
    return [block.code for block in runnable_python_blocks(README)]


def test_readme_has_python_examples():
    assert len(python_blocks()) >= 2


def test_the_own_text_recipes_figures_are_the_benchmarks():
    """What "Your own text" says of its recipe is what benchmarks/results/translation.json
    measured: the epochs of its spec, and the cased BLEU and invented words of the
    `recipe` case (beam search, as the exports decode, and greedy), of `transformer-subword`
    (the same spec with 1,500 ids) and of `rnn-subword` (the GRU beside it)."""
    import json
    import re

    import yaml

    from tests.docs.snippets import section_blocks

    results = json.loads(
        (README.parent / "benchmarks" / "results" / "translation.json").read_text("utf-8")
    )
    by_case = {result["case"]: result for result in results["results"]}
    recipe, larger, gru = by_case["recipe"], by_case["transformer-subword"], by_case["rnn-subword"]
    (spec_block,) = [b for b in section_blocks(README, "Your own text") if b.language == "yaml"]
    spec = yaml.safe_load(spec_block.code)
    measured = results["specs"]["recipe"]  # the spec the benchmark trained
    assert spec["model"] == measured["model"]
    for field in ("batch_size", "schedule", "label_smoothing", "seed"):
        assert spec["train"].get(field) == measured["train"].get(field), field
    assert spec["train"]["epochs"] == recipe["epochs"]
    assert spec["task"]["vocab_size"] == results["settings"]["recipe_vocab_size"]
    text = " ".join(README.read_text("utf-8").split("## Your own text", 1)[1].split())
    said = {
        "recipe beam": rf"scored {recipe['decoding']['beam']['bleu']:.1f} cased BLEU",
        "recipe greedy": rf"\({recipe['decoding']['greedy']['bleu']:.1f} decoding greedily\)",
        "recipe invented": rf"{recipe['decoding']['beam']['invented_words']:.1%} of its words",
        "larger beam": rf"scored {larger['decoding']['beam']['bleu']:.1f}, with",
        "larger epochs": rf"\({larger['epochs']} epochs\)",
        "gru beam": rf"trained as long, scored {gru['decoding']['beam']['bleu']:.1f}",
        "larger invented": rf"{larger['decoding']['beam']['invented_words']:.1%} invented",
        "pairs": rf"{results['training_pairs']:,} training pairs",
    }
    missing = [what for what, pattern in said.items() if not re.search(pattern, text)]
    assert not missing, f"README's own-text figures differ from the benchmark's: {missing}"
