"""Subcommands of ``ma``: every module here defines ``register(subparsers)`` and is found automatically."""
