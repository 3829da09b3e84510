"""Code blocks of the documentation pages, as the snippet tests read them.

A page is README.md or a Markdown file under docs/ (the MkDocs hooks excluded). Its fenced
blocks are taken in order with their language: `python` blocks run, `yaml` blocks that are
specs are validated, `bash` blocks are checked against the `keras-seq` argument parser. A
line `--8<-- "path"` inside a block is replaced by that file, as pymdownx.snippets does when
the site is built, so included code is what runs. A python block opts out of running only
with a first line `# not run: <reason>`.
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


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, its line in the page, its language and its text."""

    page: Path
    line: int
    language: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def not_run_reason(self) -> str | None:
        """The reason given on a `# not run:` first line, or None for a block that runs."""
        first = self.code.splitlines()[0] if self.code.strip() else ""
        match = NOT_RUN.match(first.strip())
        return match.group(1) if match else None


def pages() -> list[Path]:
    """README.md and every Markdown page of the site, sorted."""
    found = sorted(path for path in DOCS.rglob("*.md") if "hooks" not in path.parts)
    return [ROOT / "README.md", *found]


def _expand(code: str) -> str:
    return INCLUDE.sub(lambda m: (ROOT / m.group(1)).read_text(encoding="utf-8"), code)


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """The fenced blocks of `page` (of one language, if given), included files expanded."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if language is not None and match.group(1) != language:
            continue
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, match.group(1), _expand(match.group(2))))
    return found


def python_pages() -> list[Path]:
    """The pages with at least one python block."""
    return [page for page in pages() if blocks(page, "python")]
