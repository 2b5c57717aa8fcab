"""What MPICH's Hydra ``mpiexec`` says about the end of a job, read from its stdout on the way to ours.

On a failure Hydra prints a banner (``BAD TERMINATION ...``, ``PID <pid> RUNNING AT <host>``, ``EXIT CODE: n``),
the exit string (``... EXIT STRING: Killed (signal 9)``) and, with ``-print-all-exitcodes``, every rank's raw
wait status (``[mpiexec@host] Exit codes: [host] 0,9,768``). docs/trace-format.md ("Run record") has what
these were measured to mean, and why ma run does not name the failed rank from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

_BANNER_PID = re.compile(rb"^=\s+PID (\d+) RUNNING AT (\S+)")
_BANNER_CODE = re.compile(rb"^=\s+EXIT CODE: (-?\d+)")
_EXIT_CODES = re.compile(rb"^\[mpiexec@[^\]]*\] Exit codes: (.*)$")
_EXIT_STRING = re.compile(rb"EXIT STRING: (.*?)\s*$")
_HYDRA_PREFIX = b"[mpiexec@"


@dataclass
class LauncherReport:
    """What Hydra's mpiexec said about the end of the job (its stdout), parsed line by line."""

    pid: int | None = None
    host: str | None = None
    exit_code: int | None = None
    exit_string: str | None = None
    exit_codes: list[int] = field(default_factory=list)  # raw wait status per rank, in rank order
    lines: list[str] = field(default_factory=list)

    def feed(self, line: bytes) -> bool:
        """Read one line of the launcher's stdout; True for the exit-code list, which only ma run asked for."""
        text = line.rstrip(b"\r\n")
        for pattern, action in ((_BANNER_PID, self._pid), (_BANNER_CODE, self._code), (_EXIT_CODES, self._codes),
                                (_EXIT_STRING, self._string)):
            match = pattern.search(text) if pattern is _EXIT_STRING else pattern.match(text)
            if match:
                action(match)
                self.lines.append(text.decode(errors="replace"))
                return pattern is _EXIT_CODES
        return False

    def _pid(self, match: re.Match[bytes]) -> None:
        self.pid, self.host = int(match.group(1)), match.group(2).decode(errors="replace")

    def _code(self, match: re.Match[bytes]) -> None:
        self.exit_code = int(match.group(1))

    def _codes(self, match: re.Match[bytes]) -> None:
        # "[host] 9,0,0 [host2] 0,0": the ranks of every host, in order
        for group in re.findall(rb"\[[^\]]*\]\s*([-\d,]+)", match.group(1)):
            self.exit_codes += [int(code) for code in group.split(b",") if code.strip(b"-").isdigit()]

    def _string(self, match: re.Match[bytes]) -> None:
        self.exit_string = match.group(1).decode(errors="replace")

    @property
    def said_anything(self) -> bool:
        return bool(self.lines)

    def to_json(self, pids: dict[int, int]) -> dict[str, Any]:
        rank = next((r for r, p in pids.items() if p == self.pid), None)
        return {"pid": self.pid, "rank": rank, "host": self.host, "exit_code": self.exit_code,
                "exit_string": self.exit_string, "exit_codes": self.exit_codes or None, "lines": self.lines}


class LineReader(Protocol):
    def feed(self, line: bytes) -> bool:
        """Read one line of the launcher's output; True to keep it out of ours."""
        ...


def forward(stream: BinaryIO, out: BinaryIO, report: LineReader) -> None:
    """Copy the launcher's stdout to ours as it comes, reading Hydra's own lines on the way (the exit-code
    list, which ``-print-all-exitcodes`` adds on every run, goes to the run record only). A partial line is
    passed on at once, unless it may be the start of that list."""
    writing, buffer, shown = True, b"", 0  # shown: bytes of the partial line in buffer already passed on

    def write(data: bytes) -> None:
        nonlocal writing
        if writing and data:
            try:
                out.write(data)
                out.flush()
            except OSError:  # our stdout went away (ma run ... | head): keep draining, or the job would block
                writing = False

    while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line, buffer = buffer[:end + 1], buffer[end + 1:]
            if not (report.feed(line) and shown == 0):
                write(line[shown:])
            shown = 0
        if buffer and not (_HYDRA_PREFIX.startswith(buffer) or buffer.startswith(_HYDRA_PREFIX)):
            write(buffer[shown:])
            shown = len(buffer)
    write(buffer[shown:])
