"""``ma signature DIR -o sig.json``: the application signature of a signature run, for ``ma predict --signatures``.

DIR is a ``ma run --counters valgrind --cache PROFILE`` run (hit rates of its loadstore sites, cache lines each
level served per flop of its flop sites); ``--calls CCALLS_DIR`` adds a ``ma run --counters ccalls`` run (calls into
compiled code and subscripts per execution: a Python program's runtime part); ``--csr-rows ID ENTRIES ROWS`` states
a CSR row loop the program runs at every site of that id, ``--add-chain ID TERMS`` a dependent sum of TERMS terms
per execution (a compiled dot product); ``--shared DIR`` adds a run of the same problem with the last cache shared
(``ma run ... --cache-share K``): the hit rates of one of K ranks on a node (:mod:`backends.signature`). Per
execution, the figures carry to other classes and process counts through the model's trip counts; the hit rates
belong to the problem size of the run, as where the data sits depends on it.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import output_file
    parser = subparsers.add_parser("signature", help="the application signature of a signature run (hit rates, "
                                                     "lines per flop, calls per execution) for ma predict",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace_dir", metavar="DIR",
                        help="trace directory of a ma run --counters valgrind --cache PROFILE run")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", type=output_file(),
                        help="signature file to write")
    parser.add_argument("--calls", metavar="DIR", help="trace directory of a ma run --counters ccalls run: calls "
                                                       "into compiled code and subscripts per execution")
    parser.add_argument("--csr-rows", nargs=3, action="append", default=[], metavar=("ID", "ENTRIES", "ROWS"),
                        help="the sites of this id are CSR row loops of ENTRIES entries over ROWS rows per execution "
                             "(expressions in the program's variables); repeatable")
    parser.add_argument("--add-chain", nargs=2, action="append", default=[], metavar=("ID", "TERMS"),
                        help="the sites of this id are one dependent sum of TERMS terms per execution (a compiled dot "
                             "product, or a row loop whose rows the core cannot overlap; an expression in the "
                             "program's variables), priced at the profile's cpu.add_chain_s; repeatable")
    parser.add_argument("--shared", action="append", default=[], metavar="DIR",
                        help="trace directory of a ma run --counters valgrind --cache PROFILE --cache-share K run of "
                             "the same problem: the hit rates of a rank that shares the last cache with K-1 others "
                             "(K read from its run record); repeatable, one per K")
    parser.add_argument("--machine", metavar="PROFILE",
                        help="check that the hit rates are of this profile's hierarchy (its number of levels)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="warn about missing or unreadable rank files and use the ranks present")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from backends.signature import KINDS, check_hit_rates, check_lines_per_flop, from_traces, save_signature_file
    from ma_cli.support import load_profile, load_traces
    from ma_core.errors import MAError

    cache = load_traces(args)
    calls = load_traces(argparse.Namespace(**{**vars(args), "trace_dir": args.calls})) if args.calls else None
    stated = {site_id: (entries, rows) for site_id, entries, rows in args.csr_rows}
    if len(stated) != len(args.csr_rows):
        raise MAError("--csr-rows: a site id is given more than once")
    chains = dict(args.add_chain)
    if len(chains) != len(args.add_chain):
        raise MAError("--add-chain: a site id is given more than once")
    both = sorted(set(chains) & set(stated))
    if both:
        raise MAError(f"site id {both[0]!r} is given both as --csr-rows and as --add-chain: one kernel, one statement")
    shared = [load_traces(argparse.Namespace(**{**vars(args), "trace_dir": d})) for d in args.shared]
    signature = from_traces(cache, calls, stated, chains, shared)
    if args.machine:
        machine = load_profile(args.machine)
        for path, rates in signature.hit_rates.items():
            check_hit_rates(rates, machine.levels, f"site {path!r} against profile {machine.name!r}")
        for path, shared_rows in signature.shared_hit_rates.items():
            for share, rates in shared_rows:
                check_hit_rates(rates, machine.levels, f"site {path!r} shared by {share:g}, against profile "
                                                       f"{machine.name!r}")
        for path, lines in signature.lines_per_flop.items():
            check_lines_per_flop(list(lines), machine.levels, f"site {path!r} against profile {machine.name!r}")
    if not signature.paths:
        print(f"ma signature: warning: {args.trace_dir} (and the calls run) measured nothing a signature holds: run "
              "the program under ma run --counters valgrind --cache PROFILE (and --counters ccalls)", file=sys.stderr)
    target = save_signature_file(signature, args.output)
    counts = ", ".join(f"{kind.replace('_', ' ')} {len(getattr(signature, kind))}" for kind in KINDS)
    print(f"{target}: sites with {counts}")
    return 0
