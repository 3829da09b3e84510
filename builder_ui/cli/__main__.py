"""`python -m builder_ui.cli`: the `keras-seq` command."""

import sys

from builder_ui.cli import main

sys.exit(main())
