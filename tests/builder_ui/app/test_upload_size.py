"""An uploaded data file over what its task's loader reads is refused by its size, unread
(issue 42): a 1 GB file under `--max-upload-mb 1024` was read whole, decoded, then read again
by the loader, which refused it at its own bound; the app grew by 2.97 GB on the way."""

from __future__ import annotations

import pytest

from builder_ui.app import uploads
from tests.allocation import allocates_little

MB = 1_000_000


@pytest.mark.parametrize(
    ("kind", "name", "size", "limit"),
    [
        ("labelled_sequences", "big.csv", 200 * MB, 100 * MB),
        ("numeric_series", "big.tsv", 200 * MB, 100 * MB),
        ("parallel_text", "big.txt", 120 * MB, 50 * MB),
    ],
)
def test_a_file_over_its_loaders_bound_is_refused_by_its_size_before_it_is_read(
    tmp_path, kind, name, size, limit
):
    big = tmp_path / name
    with big.open("wb") as file:
        file.truncate(size)  # sparse: no disk written
    root = tmp_path / "uploads"
    with allocates_little():
        result = uploads.check_upload(big, kind, root, max_bytes=2**30)
    assert not result.ok
    assert result.message == (
        f"{name}: {size:,} bytes is more than a file of this kind may have ({limit:,} bytes); "
        "split it or keep the rows you need."
    )
    assert uploads.reading_limit(kind) == limit
    assert not root.exists()  # nothing stored


def test_a_csv_field_past_the_csv_modules_limit_is_refused_at_its_line(tmp_path):
    # Python's csv module refuses a field over 131,072 characters; the upload's first look
    # at the file raised it as a traceback.
    path = tmp_path / "wide.csv"
    path.write_text("neg," + "x" * 200_000 + "\npos,fine\n", encoding="utf-8")
    result = uploads.check_upload(path, "labelled_sequences", tmp_path / "uploads")
    assert not result.ok
    assert result.message.startswith("wide.csv, line 1: unreadable CSV: field larger than")
