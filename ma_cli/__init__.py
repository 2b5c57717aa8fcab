"""The ``ma`` command line. Each subcommand lives in ma_cli/commands/<name>.py."""
