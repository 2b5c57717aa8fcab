"""Outputs go where asked: every output option of ``ma`` refuses a device, a FIFO, a directory, a missing
directory or a path below a file with one clear line (exit status 2) before any work, and writes nothing;
``--plot`` needs a figure suffix (matplotlib used to add ``.png`` itself: ``--plot /dev/full`` wrote
``/dev/full.png``); the exporters refuse a FIFO in place of a file they would write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from post_fixtures import cg_program, write_run
from test_post_export import expression_model

from ma_cli.main import main
from ma_core.errors import MAError
from ma_post.export import export_python

# Each command with an output option, the option last (its value follows).
FILE_OPTIONS = {
    "report": ["report", "{run}", "-o"],
    "signature": ["signature", "{run}", "-o"],
    "export --hatchet": ["export", "{run}", "--hatchet"],
    "export --extrap": ["export", "{run}", "--extrap"],
    "machine probe": ["machine", "probe", "-o"],
    "machine fit": ["machine", "fit", "profile.json", "-o"],
    "machine streams": ["machine", "streams", "profile.json", "-o"],
    "machine subscripts": ["machine", "subscripts", "profile.json", "-o"],
    "sweep --plot": ["sweep", "{run}", "-q", "flops", "--set", "na=1400,2800", "--plot"],
    "scaling --plot": ["scaling", "{run}", "--nprocs", "2,4", "--plot"],
    "sensitivity --plot": ["sensitivity", "{run}", "-q", "flops", "--plot"],
}
DIRECTORY_OPTIONS = {
    "export --python": ["export", "{run}", "--python"],
    "export --octave": ["export", "{run}", "--octave"],
    "export --c": ["export", "{run}", "--c"],
    "synth": ["synth", "{run}"],
}


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of a command that argparse stopped (exit status 2)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture()
def places(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Bad output paths and the words of their error."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "file.txt").write_text("not a directory\n")
    return {
        "device": ("/dev/full", "/dev/full is not a regular file (a device, FIFO or socket)"),
        "fifo": (str(fifo), f"{fifo} is not a regular file"),
        "directory": (str(tmp_path), f"{tmp_path} is a directory: expected the name of a file to write"),
        "missing directory": (str(tmp_path / "missing" / "out.svg"),
                              f"the directory {tmp_path / 'missing'} does not exist"),
        "below a file": (str(tmp_path / "file.txt" / "out.svg"), f"{tmp_path / 'file.txt'} is not a directory"),
    }


@pytest.mark.parametrize("command", list(FILE_OPTIONS))
def test_every_output_file_option_refuses_what_is_not_a_regular_file_in_a_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], places: dict[str, tuple[str, str]], command: str) -> None:
    run = str(tmp_path / "run")  # never read: the options are checked first
    before = sorted(p.name for p in tmp_path.iterdir())
    for where, (path, words) in places.items():
        argv = [a.format(run=run) for a in FILE_OPTIONS[command]] + [path]
        line = refused(argv, capsys)
        assert line.startswith(f"ma {argv[0]}") and words in line, (where, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not Path("/dev/full.png").exists()


@pytest.mark.parametrize("command", ["sweep --plot", "scaling --plot", "sensitivity --plot"])
def test_a_plot_needs_a_figure_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    target = tmp_path / "figure"
    argv = [a.format(run=str(tmp_path)) for a in FILE_OPTIONS[command]] + [str(target)]
    line = refused(argv, capsys)
    assert f"{target}: expected a file name ending in .png, .svg, .pdf" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", list(DIRECTORY_OPTIONS))
def test_every_output_directory_option_refuses_a_path_that_is_not_a_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    run = str(tmp_path / "run")
    (tmp_path / "file.txt").write_text("x\n")
    cases = {"/dev/null": "/dev/null is not a directory",
             str(tmp_path / "file.txt"): f"{tmp_path / 'file.txt'} is not a directory",
             str(tmp_path / "file.txt" / "sub"): f"{tmp_path / 'file.txt'} is not a directory"}
    for path, words in cases.items():
        line = refused([a.format(run=run) for a in DIRECTORY_OPTIONS[command]] + [path], capsys)
        assert words in line, line


def test_a_good_plot_and_a_new_export_directory_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", cg_program(), size=2)
    plot = tmp_path / "sweep.svg"
    assert main(["sweep", str(run), "-q", "flops", "--set", "na=1400,2800", "--plot", str(plot), "--quiet"]) == 0
    assert plot.read_text().lstrip().startswith("<?xml")
    assert main(["export", str(run), "--python", str(tmp_path / "new" / "py"), "-q", "flops"]) == 0
    assert (tmp_path / "new" / "py" / "ma_models.py").is_file()
    capsys.readouterr()


def test_an_exporter_never_writes_into_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "ma_models.py")
    with pytest.raises(MAError, match=r"ma_models\.py is not a regular file"):
        export_python([expression_model("q", "2*a")], tmp_path)
