"""The one build scheme of every C part (ma_tools.build): built once, rebuilt when a source or setting changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ma_core.errors import ToolBuildError
from ma_runtime.built import read_stamp, stamp_path
from ma_tools.build import build_c
from ma_tools.toolchain import find_cc


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MA_BUILD_DIR", str(tmp_path / "build"))
    path = tmp_path / "answer.c"
    path.write_text("int answer(void) { return 42; }\n")
    return path


def command(source: Path, *extra: str) -> list[str]:
    return [str(find_cc()), "-O2", "-fPIC", "-shared", *extra, str(source)]


def test_a_product_is_built_once_and_stamped(source: Path, tmp_path: Path) -> None:
    product = build_c("libanswer.so", command(source), [source], "the answer")
    assert product == tmp_path / "build" / "libanswer.so" and product.is_file()
    stamp = read_stamp(product)
    assert len(stamp["fingerprint"]) == 64
    before = product.stat().st_mtime_ns
    assert build_c("libanswer.so", command(source), [source], "the answer") == product
    assert product.stat().st_mtime_ns == before
    assert sorted(p.name for p in product.parent.iterdir()) == [".build.lock", "libanswer.so", "libanswer.so.stamp"]


def test_a_changed_source_or_setting_or_a_forced_build_rebuilds(source: Path) -> None:
    product = build_c("libanswer.so", command(source), [source], "the answer")
    stamps = [read_stamp(product)["fingerprint"]]
    source.write_text("int answer(void) { return 43; }\n")
    build_c("libanswer.so", command(source), [source], "the answer")
    stamps.append(read_stamp(product)["fingerprint"])
    build_c("libanswer.so", command(source, "-g"), [source], "the answer")
    stamps.append(read_stamp(product)["fingerprint"])
    assert len(set(stamps)) == 3
    before = product.stat().st_mtime_ns
    build_c("libanswer.so", command(source, "-g"), [source], "the answer", force=True)
    assert product.stat().st_mtime_ns != before and read_stamp(product)["fingerprint"] == stamps[-1]


def test_a_stamp_of_another_scheme_is_not_taken_for_up_to_date(source: Path) -> None:
    product = build_c("libanswer.so", command(source), [source], "the answer")
    stamp_path(product).write_text(read_stamp(product)["fingerprint"] + "\n")  # a bare hash line: not a stamp
    assert read_stamp(product) == {}
    build_c("libanswer.so", command(source), [source], "the answer")
    assert "fingerprint" in read_stamp(product)


def test_a_failed_build_leaves_no_product_and_no_stamp(source: Path) -> None:
    source.write_text("int answer(void) { return }\n")
    with pytest.raises(ToolBuildError, match=r"building the answer failed \(exit \d+\):\n  .*answer\.c"):
        build_c("libanswer.so", command(source), [source], "the answer")
    built = source.parent / "build"
    assert sorted(p.name for p in built.iterdir()) == [".build.lock"]


def test_missing_sources_are_named(source: Path) -> None:
    with pytest.raises(ToolBuildError, match=r"building the answer: source files missing: .*gone\.c"):
        build_c("libanswer.so", command(source), [source, source.with_name("gone.c")], "the answer")
