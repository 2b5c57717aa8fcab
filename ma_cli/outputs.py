"""Output options of the ``ma`` commands as argparse types: each path is checked (ma_core.outputs) when the
command line is parsed, so a bad one stops the command with one clear line before any work."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from ma_core.errors import MAError
from ma_core.outputs import FIGURE_SUFFIXES, check_output_directory, check_output_file


def _argument(check: Callable[[str], Path]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            check(text)
        except MAError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    return parse


def output_file(suffixes: Sequence[str] = ()) -> Callable[[str], str]:
    """An argparse ``type`` for an option naming a file to write (``suffixes``: the allowed endings)."""
    parse = _argument(lambda text: check_output_file(text, suffixes))
    parse.__name__ = "output file"  # argparse names the type in its messages
    return parse


output_directory = _argument(check_output_directory)
output_directory.__name__ = "output directory"


__all__ = ["FIGURE_SUFFIXES", "check_output_directory", "check_output_file", "output_directory", "output_file"]
