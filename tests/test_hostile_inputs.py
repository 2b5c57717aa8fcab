"""Bounded work on hostile inputs: a FIFO or a device given as a trace, a merged trace, a run record or a machine
profile, a zip bomb as a merged trace, a header that claims 10^9 ranks. Each ends within seconds in one line
naming the file and what was expected; the commands run in a subprocess with a deadline and a memory limit, so
that a regression fails the test instead of hanging it or filling the machine's memory."""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import VENV_BIN, clean_env
from post_fixtures import cg_program, make_trace, write_run

from ma_core.trace_format import MERGED_FILE, MERGED_INDEX, RUN_RECORD_FILE, rank_file
from ma_runtime.merge import Bundle, build_archive, part_of, write_archive

MEMORY_LIMIT = 2 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def ma(*args: str) -> subprocess.CompletedProcess[str]:
    """``ma ARGS`` with 30 s and 2 GiB at most (a FIFO read would block forever, /dev/zero fill the memory)."""
    return subprocess.run([str(VENV_BIN / "ma"), *args], capture_output=True, text=True, timeout=30,
                          env=clean_env(), preexec_fn=_limit_memory)


def one_line_error(done: subprocess.CompletedProcess[str], command: str, expected: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ma {command}: error: "), done.stderr
    assert expected in lines[0], lines[0]


def merged_members(size: int = 1) -> dict[str, bytes]:
    bundle = Bundle()
    for rank in range(size):
        bundle.add(part_of(make_trace(cg_program(), rank, size)))
    return build_archive(bundle, size)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_rank_file_or_merged_file_that_is_a_fifo_or_a_device_is_named(tmp_path: Path, kind: str) -> None:
    def hostile(path: Path) -> None:
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")

    what = "a FIFO" if kind == "fifo" else "a character device"
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    hostile(rank_file(ranks, 0))
    one_line_error(ma("validate", str(ranks)), "validate",
                   f"{rank_file(ranks, 0)}: cannot read: it is {what}, not a regular file")
    merged = tmp_path / "merged"
    merged.mkdir()
    hostile(merged / MERGED_FILE)
    one_line_error(ma("model", str(merged)), "model", f"{merged / MERGED_FILE}: cannot read: it is {what}")
    named = tmp_path / "named.npz"
    hostile(named)
    one_line_error(ma("validate", str(named)), "validate", f"{named}: cannot read: it is {what}")
    run = write_run(tmp_path / "run", cg_program(), size=1)
    hostile(run / RUN_RECORD_FILE)
    one_line_error(ma("validate", str(run)), "validate",
                   f"{run / RUN_RECORD_FILE}: cannot read the run record: it is {what}")
    profile = tmp_path / "profile.json"
    hostile(profile)
    one_line_error(ma("predict", str(run), "--machine", str(profile)), "predict",
                   f"{profile}: cannot read: it is {what}, not a regular file")


def test_a_zip_bomb_as_a_merged_trace_is_refused_before_it_inflates(tmp_path: Path) -> None:
    members = merged_members()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": (12_500_000,)})
    with zipfile.ZipFile(tmp_path / MERGED_FILE, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if name != "rank.npy":
                archive.writestr(name, data)
        with archive.open("rank.npy", "w") as member:  # 100 MB of zeros: about 100 KB deflated
            member.write(header.getvalue())
            for _ in range(100):
                member.write(bytes(1_000_000))
    assert (tmp_path / MERGED_FILE).stat().st_size < 1_000_000
    one_line_error(ma("validate", str(tmp_path)), "validate",
                   f"{tmp_path / MERGED_FILE}: member rank.npy would inflate from ")


def test_an_array_member_that_claims_more_than_it_holds_is_refused_before_allocating(tmp_path: Path) -> None:
    members = merged_members()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": (10**9,)})
    members["rank.npy"] = header.getvalue() + bytes(8)  # 8 GB claimed, 8 bytes there
    write_archive(tmp_path, members)
    one_line_error(ma("validate", str(tmp_path)), "validate",
                   "member rank.npy says it holds (1000000000,) of int64 (8,000,000,000 bytes) but has ")


def test_a_header_or_index_that_claims_a_billion_ranks_is_refused_at_once(tmp_path: Path) -> None:
    document = make_trace(cg_program(), 0, 1)
    document["header"]["size"] = 10**9
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    rank_file(ranks, 0).write_text(json.dumps(document))
    for extra in ([], ["--allow-missing"]):
        one_line_error(ma("validate", *extra, str(ranks)), "validate",
                       "rank-0.ma.json: header.size is 1,000,000,000, expected at most 16,777,216 processes")
    members = merged_members()
    index = json.loads(members[MERGED_INDEX])
    index["size"] = 10**9
    members[MERGED_INDEX] = json.dumps(index).encode()
    write_archive(tmp_path / "merged", members)
    one_line_error(ma("validate", "--allow-missing", str(tmp_path / "merged")), "validate",
                   f"{MERGED_FILE}: {MERGED_INDEX}: size 1,000,000,000, expected 1 to 16,777,216 processes")


def test_a_claim_within_the_limit_lists_its_missing_ranks_quickly(tmp_path: Path) -> None:
    document = make_trace(cg_program(), 0, 1)
    document["header"]["size"] = 1 << 20
    rank_file(tmp_path, 0).write_text(json.dumps(document))
    one_line_error(ma("validate", str(tmp_path)), "validate",
                   "1048575 of 1048576 rank files missing (rank-1.ma.json, ")
