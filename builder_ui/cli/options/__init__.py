"""The arguments of each `keras-seq` command: one module per command, with no heavy import.

`builder_ui.cli` declares every command's arguments from these modules, so that `keras-seq
--help` and `keras-seq COMMAND --help` load neither pydantic nor YAML nor Keras; the
command's own module (`builder_ui.cli.<command>`), which imports what it runs at its top,
loads when the command runs.
"""
