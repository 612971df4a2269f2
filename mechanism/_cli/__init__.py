"""The ``mechanism`` command line (private, as inspect_ai's ``_cli``): :mod:`~mechanism._cli.main`
builds the parser from the subcommand modules, imported explicitly. The library never imports
this package.
"""
