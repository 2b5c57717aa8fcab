"""bench/cg_repeat.py, the CG overhead bench's worker: served sections, with the annotations live or as no-ops."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

import pytest
from conftest import REPO, VENV_BIN, clean_env, find_node

NPROCS = 2


def serve_sections(tmp_path: Path, sections: int, *worker_args: str) -> dict[str, Any]:
    """Start the worker under ``ma run``, order ``sections`` timed sections, stop it; rank 0's trace."""
    path = tmp_path / "bench.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(NPROCS)
        listener.settimeout(300)
        argv = [str(VENV_BIN / "ma"), "run", "-n", str(NPROCS), "--trace-dir", str(tmp_path / "traces"), "--",
                sys.executable, str(REPO / "bench" / "cg_repeat.py"), "--class", "S", "--serve", str(path),
                *worker_args]
        job = subprocess.Popen(argv, cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        ranks: dict[int, tuple[socket.socket, TextIO]] = {}
        try:
            for _ in range(NPROCS):
                link = listener.accept()[0]
                lines = link.makefile("r")
                ranks[int(lines.readline())] = (link, lines)
            results = ranks[0][1]
            seconds = []
            for _ in range(sections):
                for link, _lines in ranks.values():
                    link.sendall(b"g")
                seconds.append(float(results.readline()))
            for link, _lines in ranks.values():
                link.sendall(b"q")
            output, _ = job.communicate(timeout=300)
        finally:
            for link, _lines in ranks.values():
                link.close()
            if job.poll() is None:
                job.kill()
    assert job.returncode == 0, output
    assert len(seconds) == sections and all(s > 0 for s in seconds)
    return json.loads((tmp_path / "traces" / "rank-0.ma.json").read_text())


@pytest.mark.mpi
@pytest.mark.parametrize("noops", [False, True], ids=["annotations", "noops"])
def test_served_sections_run_with_the_annotations_live_or_as_noops(tmp_path: Path, noops: bool) -> None:
    trace = serve_sections(tmp_path, 2, *(["--noops"] if noops else []))
    root = trace["threads"][0]["root"]
    # the warm-up runs annotated in both; the timed sections' outer loop only while the annotations are live
    assert find_node(root, "warmup")["calls"] == 1
    if noops:
        with pytest.raises(KeyError):
            find_node(root, "conj_loop")
    else:
        conj_loop = find_node(root, "conj_loop")
        assert conj_loop["calls"] == 2 and conj_loop["fail"] == 0


@pytest.mark.parametrize("args, env, message", [
    (["--switch", "--noops"], {}, "--noops goes with --serve"),
    (["--serve", "unused.sock", "--noops"], {"MA_DISABLE": "1"}, "run without MA_DISABLE"),
])
def test_the_worker_refuses_noops_where_they_compare_nothing(tmp_path: Path, args: list[str], env: dict[str, str],
                                                           message: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "cg_repeat.py"), "--class", "S", *args],
                          cwd=tmp_path, env=clean_env(**env), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and message in done.stderr
