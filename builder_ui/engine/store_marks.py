"""What a person adds to a run in the run store: its name, tags, note, star and archive mark
(`RunStore`'s base).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from builder_ui.engine.records import MAX_TAGS_PER_RUN, check_name, check_note, check_tag
from builder_ui.engine.store_errors import RunNotFoundError


class StoreMarks:
    """A run's name, tags, note, star and archive mark; see the module docstring."""

    def rename(self, run_id: str, name: str) -> None:
        """Give a run another name (1 to `MAX_NAME_LENGTH` characters on one line, stripped)."""
        self.update(run_id, name=check_name(name))

    def add_tags(self, run_id: str, tags: Iterable[str]) -> tuple[str, ...]:
        """Tag a run (a tag it has already is kept once); returns its tags, sorted.

        Raises:
            ValueError: A tag that is not one word (`check_tag`), or more than
                `MAX_TAGS_PER_RUN` tags on the run; then no tag is added.
        """
        new = [check_tag(tag) for tag in ([tags] if isinstance(tags, str) else tags)]
        with self._write() as conn:
            self._require(conn, run_id)
            have = {
                row[0] for row in conn.execute("SELECT tag FROM tags WHERE run_id = ?", (run_id,))
            }
            total = have | set(new)
            if len(total) > MAX_TAGS_PER_RUN:
                raise ValueError(
                    f"Received an invalid value for argument `tags`, expected at most "
                    f"{MAX_TAGS_PER_RUN} tags on run {run_id!r}, got {len(total)}."
                )
            conn.executemany(
                "INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?, ?)",
                [(run_id, tag) for tag in new],
            )
        return tuple(sorted(total))

    def remove_tags(self, run_id: str, tags: Iterable[str]) -> tuple[str, ...]:
        """Take tags off a run (one it lacks is no error); returns the tags left, sorted."""
        gone = [tags] if isinstance(tags, str) else list(tags)
        with self._write() as conn:
            self._require(conn, run_id)
            conn.executemany(
                "DELETE FROM tags WHERE run_id = ? AND tag = ?", [(run_id, tag) for tag in gone]
            )
            rows = conn.execute("SELECT tag FROM tags WHERE run_id = ? ORDER BY tag", (run_id,))
            return tuple(row[0] for row in rows)

    def set_note(self, run_id: str, note: str) -> None:
        """Replace the run's note (`""` clears it); at most `MAX_NOTE_LENGTH` characters."""
        self._set_mark(run_id, "note", check_note(note))

    def set_starred(self, run_id: str, starred: bool = True) -> None:
        """Star a run (or with `starred=False` unstar it)."""
        self._set_mark(run_id, "starred", int(bool(starred)))

    def set_archived(self, run_id: str, archived: bool = True) -> None:
        """Archive a run, hiding it from the app's table by default (`archived=False` restores)."""
        self._set_mark(run_id, "archived", int(bool(archived)))

    def all_tags(self) -> list[str]:
        """Every tag some run has, sorted (for a tag filter's menu)."""
        return [row[0] for row in self._read("SELECT DISTINCT tag FROM tags ORDER BY tag")]

    def _set_mark(self, run_id: str, column: str, value: Any) -> None:
        with self._write() as conn:
            cursor = conn.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run_id))
            if cursor.rowcount == 0:
                raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")
