"""Handlers of the CLI subcommands: ``run(args) -> int``, imported lazily by ``cli``."""
