"""The page keeps Gradio's files in the app's own private folder, removed when the app closes."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

from builder_ui.app.page import build_app


def test_gradios_cache_is_private_to_the_app_and_removed_at_close(tmp_path):
    app = build_app(tmp_path / "runs", slots=["CPU"])
    ctx = app.keras_seq_context
    try:
        cache = Path(app.GRADIO_CACHE)
        assert cache == ctx.gradio_cache and cache.is_relative_to(ctx.scratch)
        assert cache != Path(tempfile.gettempdir()) / "gradio"
        assert stat.S_IMODE(ctx.scratch.stat().st_mode) == 0o700  # mkdtemp: this user only
    finally:
        ctx.close()
    assert not ctx.scratch.exists()
