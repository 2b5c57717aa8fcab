"""The repository is the product, not a record of how it was made.

Every tracked text file (``git ls-files``) is read, and none may carry: paths of the machine it was developed on,
the words of how the work was organised (numbered sessions, helpers, worktrees, branches, issue numbers), or dates
and times of runs. A figure belongs in docs/ with the bench command that prints it, not with the hour it was
taken. Timestamps a tool writes into its data (ISO 8601, ``2031-01-02T03:04:05Z``, e.g. a machine profile's
``measured_at``) are data and allowed. The README stays a front door whose lines fit 120 columns.

The patterns are narrow on purpose: ``tempfile`` and ``tmp_path`` use, a pytest ``scope="session"``, "helper"
functions and the branches of an ``if`` are ordinary code.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()
README_COLUMNS = 120

PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "a path of the development machine": (
        re.compile(r"(?<![\w.~])/(?:work|root|home|Users|scratch)/[\w.-]+"),
        re.compile(r"(?<![\w.~])/tmp/[\w.-]+/[\w.-]"),  # a file inside a run's scratch directory
    ),
    "words of how the work was organised": (
        re.compile(r"\bsessions? \d+\b", re.IGNORECASE),
        re.compile(r"\b(?:this|that|earlier|previous|later|next|other) sessions?\b", re.IGNORECASE),
        re.compile(r"\bother helpers\b|\bhelpers' (?:jobs|runs|work)\b", re.IGNORECASE),
        re.compile(r"\bthe lead(?:'s)? (?:re-?probe[sd]?|measured|quiet|re-?ran|re-?runs?|probe|merge[sd]?)\b",
                   re.IGNORECASE),
        re.compile(r"\bworktrees?\b", re.IGNORECASE),
        re.compile(r"\bbranch(?:es)? `|\bbranch [a-z]+\d+\b|\bnot merged\b", re.IGNORECASE),
        re.compile(r"\bissues? #?\d+\b", re.IGNORECASE),
    ),
    "a date or time of a run": (
        re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b(?!T\d)"),  # ISO timestamps written by tools are data
        re.compile(r"\b[0-2]?\d:[0-5]\d(?::[0-5]\d)?\s*(?:UTC|GMT)\b"),
        re.compile(r"(?:\b(?:at|since|until|from|quiet|busy|probed|measured)\s+|\()[0-2]\d:[0-5]\d\b(?![:\d])"),
        re.compile(r"\b[0-2]\d:[0-5]\d\s*[\u2013-]\s*[0-2]\d:[0-5]\d\b"),
    ),
}


def tracked_text_files() -> dict[str, str]:
    """Path -> text of every tracked file that is text (binary files and this test's own patterns left out)."""
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listed = subprocess.run([git, "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    texts: dict[str, str] = {}
    for name in listed.decode().split("\0"):
        if not name or name == THIS:
            continue
        path = REPO / name
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            texts[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return texts


TEXTS = tracked_text_files()


@pytest.mark.parametrize("kind", sorted(PATTERNS))
def test_no_tracked_file_records_how_the_repository_was_made(kind: str) -> None:
    found = []
    for name, text in TEXTS.items():
        for number, line in enumerate(text.splitlines(), 1):
            for pattern in PATTERNS[kind]:
                match = pattern.search(line)
                if match:
                    start = max(match.start() - 40, 0)
                    found.append(f"{name}:{number}: ...{line[start:match.end() + 40].strip()}...")
                    break
    assert not found, f"{len(found)} line(s) with {kind}:\n" + "\n".join(found[:30])


def test_readme_lines_fit_120_columns() -> None:
    long = [f"README.md:{number}: {len(line)} characters"
            for number, line in enumerate((REPO / "README.md").read_text(encoding="utf-8").splitlines(), 1)
            if len(line) > README_COLUMNS]
    assert not long, "\n".join(long)


@pytest.mark.parametrize(("kind", "text"), [
    ("a path of the development machine", "see /work/main/.venv/bin/mpiexec"),
    ("a path of the development machine", "ran /tmp/recompute/run.sh on the traces"),
    ("words of how the work was organised", "measured in session 12 (other helpers' jobs ran)"),
    ("words of how the work was organised", "branch `maps11`, not merged"),
    ("words of how the work was organised", "the hostile inputs of issue 14"),
    ("a date or time of a run", "quiet run, 2026-11-25 00:36 UTC"),
    ("a date or time of a run", "on the 19:43 traces (22:15, load 1.1)"),
])
def test_the_patterns_catch_what_they_are_for(kind: str, text: str) -> None:
    assert any(pattern.search(text) for pattern in PATTERNS[kind]), text


@pytest.mark.parametrize("text", [
    'tempfile.mkdtemp(dir="/tmp")', "the runtime writes to $TMPDIR", '@pytest.fixture(scope="session")',
    "small helpers", "NPB's first branch", '"measured_at": "2026-11-25T00:36:05Z"', "iterations:ma_loop:10:10:0.0",
    "a[10:20] = b[0:10]", "--set nprocs=2^(0:12)", "git checkout main",
])
def test_the_patterns_leave_ordinary_text_alone(text: str) -> None:
    assert not any(pattern.search(text) for patterns in PATTERNS.values() for pattern in patterns), text
