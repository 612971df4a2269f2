"""Subcommands of the ``mechanism`` CLI, one module each."""
