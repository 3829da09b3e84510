"""The documentation site builds with warnings as errors, and holds what it promises.

`mkdocs build --strict` fails on a broken link, a missing anchor, a page left out of the
navigation, a docstring griffe cannot parse or an API reference that does not resolve. The
built pages are then read for what must be there: every built-in task and model type and
every one of their fields in the spec reference (written from the pydantic models, so it
cannot drift), and each layer's equations and paper on its API page.
"""

from __future__ import annotations

import html
import importlib.util
import re
import subprocess
import sys

import pytest

from builder_ui import builders
from tests.docs.snippets import ROOT

BUILD_TIMEOUT_S = 600  # a hang guard: the build takes about ten seconds

# The build is the docs build of `make test` (the site is built once, here): a fresh process.
pytestmark = pytest.mark.large

needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (`pip install -e '.[docs]'`, or `make venv`)",
)

# A line of each layer's equations, as its docstring writes it, and the paper it cites.
LAYER_PAGES = {
    "cec_lstm": ("c_t = c_{t-1} + i_t ⊙ g(z_c)", "Hochreiter"),
    "bahdanau_attention": ("e_tj = v_aᵀ tanh(W_a s_{t-1} + U_a h_j)", "Bahdanau"),
    "luong_attention": ("score(h_t, h̄_s) = h_tᵀ W_a h̄_s", "Luong"),
    "scaled_dot_product_attention": ("softmax", "Vaswani"),
    "pointer_attention": ("u_ij = vᵀ tanh(W_1 e_j + W_2 d_i)", "Vinyals"),
    "transformer_encoder": ("y = LayerNorm(x + Dropout(FFN(x)))", "Vaswani"),
    "transformer_decoder": ("LayerNorm", "Vaswani"),
    "positional": ("sin", "Vaswani"),
    "patches": ("z^n = x_p^n E + b", "Dosovitskiy"),
    "recurrent_decoder": ("s_t", "Bahdanau"),
    "reverse_within_length": ("reverse", "Sutskever"),
}


def _text(path) -> str:
    """The visible text of a built page, tags removed and entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out


@needs_mkdocs
def test_the_site_builds_with_warnings_as_errors(site):
    assert (site / "index.html").is_file()
    assert (site / "reference" / "spec" / "index.html").is_file()


@needs_mkdocs
def test_the_spec_reference_lists_every_builtin_type_and_field(site):
    page = (site / "reference" / "spec" / "index.html").read_text(encoding="utf-8")
    text = _text(site / "reference" / "spec" / "index.html")
    for kind, names in (("task", builders.task_types()), ("model", builders.model_types())):
        for name in names:
            params = builders.params_model(kind, name)
            if not params.__module__.startswith("builder_ui."):
                continue  # a plugin installed here is not part of keras_seq's reference
            assert f'id="{kind}-{name}"' in page, f"{kind} type {name} has no section"
            for field in params.model_fields:
                assert f"{field}" in text, f"{kind}.{field} of {name} is missing"


@needs_mkdocs
def test_a_field_shows_its_type_default_limits_and_help(site):
    text = _text(site / "reference" / "spec" / "index.html")
    # TrainSpec.epochs: Annotated[int, Field(ge=1, le=MAX_EPOCHS)] = 10, help from its Args.
    assert re.search(
        r"epochs\s*\|?\s*integer\s*\|?\s*10\s*\|?\s*≥ 1, ≤ 100000", text.replace("\n", " ")
    )
    assert "Passes over the training split." in text


@needs_mkdocs
@pytest.mark.parametrize("name", sorted(LAYER_PAGES))
def test_each_layer_page_shows_its_equations_and_paper(site, name):
    equation, author = LAYER_PAGES[name]
    text = _text(site / "reference" / "layers" / name / "index.html")
    assert equation in text
    assert "References" in text and author in text


@needs_mkdocs
def test_every_public_layer_has_an_api_entry(site):
    from keras_seq import layers  # imports Keras: only this test needs it

    pages = "".join(
        path.read_text(encoding="utf-8") for path in (site / "reference" / "layers").rglob("*.html")
    )
    for name in layers.__all__:
        assert f'id="keras_seq.layers.{name}"' in pages, name


@needs_mkdocs
def test_the_cli_reference_has_every_subcommand(site):
    from builder_ui import cli

    text = _text(site / "reference" / "cli" / "index.html")
    _, subcommands = cli.build_parser()
    for name in subcommands:
        assert f"usage: keras-seq {name}" in text, name


def test_the_readme_links_to_files_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert any(target.startswith("docs/") for target in targets)
    for target in targets:
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to {target}, which is not there"
