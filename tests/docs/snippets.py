"""Code blocks of the documentation pages, as the snippet tests read them.

A page is README.md or a Markdown file under docs/ (the MkDocs hooks excluded). Its fenced
blocks are taken in order with their language: `python` blocks run, `yaml` blocks that are
specs are validated, `bash` blocks are checked against the `keras-seq` argument parser. A
line `--8<-- "path"` inside a block is replaced by that file, as pymdownx.snippets does when
the site is built, so included code is what runs. A python block opts out of running only
with a first line `# not run: <reason>`, or by being in a section that a test of its own runs
as a whole (`RUN_ELSEWHERE`: shell commands and Python together, on data the test provides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
NOT_RUN = re.compile(r"^# not run: (\S.*)$")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", flags=re.M | re.S)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"\s*$', flags=re.M)
SECTION = re.compile(r"^## (.+?)\s*$", flags=re.M)

# (page, section) → the test that runs that section's commands and code in order.
RUN_ELSEWHERE = {
    ("README.md", "Your own text"): "tests/test_readme_own_text.py",
    # Beside a stale cluster file, where a second local Ray start would prove nothing more.
    ("docs/how-to/ray_search.md", "On one machine"): "tests/builder_ui/engine/test_executors.py",
}


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, its line in the page, its language and its text."""

    page: Path
    line: int
    language: str
    code: str
    section: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def not_run_reason(self) -> str | None:
        """The reason given on a `# not run:` first line, or None for a block that runs."""
        first = self.code.splitlines()[0] if self.code.strip() else ""
        match = NOT_RUN.match(first.strip())
        return match.group(1) if match else None

    def run_elsewhere(self) -> str | None:
        """The test that runs this block's section as a whole, or None."""
        return RUN_ELSEWHERE.get((str(self.page.relative_to(ROOT)), self.section))


def pages() -> list[Path]:
    """README.md and every Markdown page of the site, sorted."""
    found = sorted(path for path in DOCS.rglob("*.md") if "hooks" not in path.parts)
    return [ROOT / "README.md", *found]


def _expand(code: str) -> str:
    return INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), code)


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """The fenced blocks of `page` (of one language, if given), included files expanded."""
    text = page.read_text(encoding="utf-8")
    headings = [(m.start(), m.group(1)) for m in SECTION.finditer(text)]
    found = []
    for match in FENCE.finditer(text):
        if language is not None and match.group(1) != language:
            continue
        line = text.count("\n", 0, match.start()) + 1
        section = next((name for start, name in reversed(headings) if start < match.start()), "")
        found.append(Block(page, line, match.group(1), _expand(match.group(2)), section))
    return found


def section_blocks(page: Path, section: str) -> list[Block]:
    """The fenced blocks under the `## section` heading of `page`, in order."""
    return [block for block in blocks(page) if block.section == section]


def runnable_python_blocks(page: Path) -> list[Block]:
    """The python blocks the page test runs: neither `# not run` nor run by a test of their own."""
    return [
        block
        for block in blocks(page, "python")
        if block.not_run_reason() is None and block.run_elsewhere() is None
    ]


def python_pages() -> list[Path]:
    """The pages with at least one python block the page test runs."""
    return [page for page in pages() if runnable_python_blocks(page)]
