"""Subcommands of the ``mechanism`` CLI, one module each."""
from mechanism.commands._common import cli_message, option_flags, terminal_safe

__all__ = ["cli_message", "option_flags", "terminal_safe"]
