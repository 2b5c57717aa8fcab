"""``ma backends``: the machine backends installed in this environment (entry-point group ``ma.backends``)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("backends", help="list the installed machine backends")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from backends import registry
    from ma_core.errors import BackendError

    infos = registry.installed()
    if not infos:
        print(f"no backends installed (entry-point group {registry.GROUP!r})")
        return 0
    for info in infos:
        try:
            description = info.load().DESCRIPTION
        except BackendError as exc:
            description = f"BROKEN: {exc}"
        print(f"{info.name:<12} {info.value:<40} [{info.distribution}] {description}")
    return 0
