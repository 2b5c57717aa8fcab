"""`ma report`: one self-contained HTML file, opened in a real browser (Debian's headless Chromium).

The page is driven over the DevTools protocol (a small client on `websockets`): every console message,
uncaught exception and log entry is collected while it loads, every request it makes is recorded (only
the file itself may be fetched: the report must need no network), the key elements are queried in the
live DOM (MathML laid out with a width, SVG figures, the coloured validation rows, the collapsible tree and
its buttons), and a full-page screenshot is kept under pytest's tmp path and printed.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import clean_env

import ma_post
from ma_cli.backend_support import predict as backend_prediction
from ma_cli.backend_support import summary as prediction_summary
from ma_cli.main import main
from ma_post.report import build_report
from ma_post.report.build import READABLE_NODES

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-debugging-port=0", "--window-size=1280,1600"]
STENCIL = Path(__file__).with_name("post_stencil_prog.py")


class Browser:
    """A headless Chromium and one page, spoken to over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        executable = shutil.which("chromium") or shutil.which("chromium-browser")
        assert executable, "Debian's chromium is not installed (scripts/setup.sh installs it)"
        self.process = subprocess.Popen([executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            assert self.process.poll() is None and time.monotonic() < deadline, "chromium did not start"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            page = next(t for t in json.load(answer) if t["type"] == "page")
        from websockets.sync.client import connect

        self.stack = contextlib.ExitStack()
        self.socket = self.stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30))
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=120))
            if message.get("id") == ident:
                assert "error" not in message, message
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            self.events.append(json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic()))))

    def open(self, url: str) -> None:
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries seen so far."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{params['type']}: {[a.get('value') for a in params.get('args', [])]}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params['exceptionDetails'].get('text')} "
                           f"{params['exceptionDetails'].get('exception', {}).get('description', '')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
                out.append(f"log {params['entry']['level']}: {params['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.stack.close()
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "chromium-profile")
    try:
        yield b
    finally:
        b.close()


@pytest.mark.slow
def test_the_browser_harness_sees_errors_and_network(browser: Browser, tmp_path: Path) -> None:
    """The checks below could fail: a page with a script error, a console error and a remote image is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><img src='http://127.0.0.1:9/x.png'>"
                    "<script>console.error('boom'); undefinedFunction();</script></body></html>")
    browser.open(page.as_uri())
    problems = browser.problems()
    assert any("boom" in p for p in problems) and any("undefinedFunction" in p for p in problems), problems
    assert "http://127.0.0.1:9/x.png" in browser.requests()


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)


def test_report_of_a_one_process_run_is_self_contained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = tmp_path / "traces"
    done = subprocess.run([sys.executable, str(STENCIL), "12", "9", "3"], env=clean_env(MA_TRACE_DIR=str(trace_dir)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "report.html"
    assert main(["report", str(trace_dir), "-o", str(out), "--title", "stencil <&> run"]) == 0
    assert str(out.resolve()) in capsys.readouterr().out
    text = out.read_text()
    parsed = _Collect()
    parsed.feed(text)
    assert parsed.external == []  # nothing to fetch: no src/href but in-page anchors
    assert "stencil &lt;&amp;&gt; run" in text  # the title is escaped
    assert parsed.tags["math"] >= 2 and parsed.tags["svg"] >= 2 and parsed.tags["details"] >= 2
    assert "Not available: no model depends on nprocs" in text  # one process, no nprocs: said, not hidden
    assert "Not available: no MPI site with a payload" in text
    assert 'id="model-flops"' in text and "function r = flops(m, n, steps)" in text


@pytest.mark.mpi
@pytest.mark.slow
def test_report_of_cg_opens_in_chromium_without_errors(browser: Browser, tmp_path: Path,
                                                       cg_class_s_on_two_ranks: Path) -> None:
    trace_dir = cg_class_s_on_two_ranks
    ts = ma_post.load(trace_dir)
    report = tmp_path / "cg-report.html"
    builder = ma_post.ModelBuilder(ts)  # the maps backend's prediction, built as `ma report --backend` builds it
    options = argparse.Namespace(backend="maps", machine="amd-epyc-zen4-kvm")
    prediction = backend_prediction(options, builder)
    assert prediction is not None
    summary = prediction_summary(builder, prediction, {})
    report.write_text(build_report(ts, source=str(trace_dir), nprocs=[1, 2, 4, 8, 16, 32, 64], prediction=summary))
    browser.open(report.as_uri())
    shot = browser.screenshot(tmp_path / "cg-report.png")
    print(f"\nscreenshot of the report: {shot}")
    assert browser.problems() == []
    assert browser.requests() == [report.as_uri()]  # the page fetched nothing but itself
    found = browser.evaluate("""(() => {
        const q = s => document.querySelectorAll(s);
        const math = [...q("math")];
        return {
          sections: [...q("section")].map(s => s.id),
          missing: [...q("p.missing")].map(p => p.textContent),
          rows: q("#validation-table tbody tr").length,
          pass: q("#validation-table tr.pass").length,
          unmeasured: q("#validation-table tr.unmeasured").length,
          passColour: getComputedStyle(document.querySelector("#validation-table tr.pass td.status")).backgroundColor,
          math: math.length,
          mathWidth: Math.min(...math.slice(0, 5).map(m => m.getBoundingClientRect().width)),
          figures: q("figure svg").length,
          figureHeight: Math.min(...[...q("figure svg")].map(s => s.getBoundingClientRect().height)),
          details: q("#site-tree details").length,
          scalingRows: q("#scaling-table tbody tr").length,
          messageRows: q("#messages-table tbody tr").length,
          backendRows: q("#backend-table tbody tr").length,
          backendMeasured: q("#backend-measured tbody tr").length,
          backendTooLong: [...q("#backend p.too-long")].map(p => p.textContent),
        };
    })()""")
    assert found["sections"] == ["header", "validation", "tree", "models", "messages", "scaling", "sensitivity",
                                 "predicted", "backend"]
    assert found["missing"] == []
    report_rows = ma_post.validate(ts).results
    assert found["rows"] == len(report_rows) and found["pass"] == sum(r.status == "PASS" for r in report_rows) > 20
    assert found["unmeasured"] > 0 and found["passColour"] == "rgb(200, 230, 201)"
    assert found["math"] >= 5 and found["mathWidth"] > 20  # MathML laid out natively
    assert found["figures"] == 4 and found["figureHeight"] > 100
    assert found["backendRows"] == len(summary.rows) > 2 and found["backendMeasured"] == len(summary.measured) > 2
    # the whole program's predicted time is far too long to lay out: the report names the command that exports it
    assert found["backendTooLong"] == [f"time is a formula of more than {READABLE_NODES:,} terms, too long to read "
                                       "here: ma export DIR --backend maps --machine amd-epyc-zen4-kvm --python OUT "
                                       "writes it as code."]
    assert found["scalingRows"] == 7 and found["messageRows"] >= 2 and found["details"] >= 5
    collapsed = browser.evaluate("""(() => {
        document.getElementById("collapse-all").click();
        const closed = [...document.querySelectorAll("#site-tree details")].every(d => !d.open);
        document.getElementById("expand-all").click();
        const open = [...document.querySelectorAll("#site-tree details")].every(d => d.open);
        return closed && open;
    })()""")
    assert collapsed is True
    assert browser.problems() == []


def test_failing_and_unmeasured_assertions_are_coloured(run_program) -> None:  # type: ignore[no-untyped-def]
    run = run_program("""
        import ma

        ma.variable("n", 6)
        with ma.loop("wrong", "n") as lp:
            for _ in lp.range(7):
                pass
        with ma.loop("right", "n") as lp:
            for _ in lp.range(6):
                with ma.flop("work", "2*n"):
                    pass
        """, MA_COUNTERS="none")
    assert run.returncode == 0, run.stderr
    text = build_report(ma_post.load(run.trace_dir))
    rows = {line.split('<td class="text">')[1].split("<")[0]: line.split('"')[1]
            for line in text.splitlines() if line.startswith("<tr class=")}
    assert rows == {"wrong": "fail", "right": "pass", "right/work": "unmeasured"}
    assert '<span class="fail">FAIL 1</span>' in text and '<span class="pass">PASS 1</span>' in text
    assert '<details class="site pass" open>' in text and '<div class="leaf fail">' in text


def test_report_takes_the_conditional_rule_of_ma_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from post_fixtures import If, Loop, Op, Var, write_run

    # A flop site that runs in the first 4 of 10 iterations: literal counts it 10 times, observed 4 times.
    run = write_run(tmp_path / "run", [Var("n", 7), Loop("l", "10", [If(lambda env: env["iter"] < 4,
                                                                             [Op("flop", "f", "n")])])])
    texts = {}
    for rule in ("literal", "observed"):
        out = tmp_path / f"{rule}.html"
        assert main(["report", str(run), "-o", str(out), "--conditional", rule]) == 0
        capsys.readouterr()
        texts[rule] = out.read_text()
    assert "r = 10*n;" in texts["literal"] and "r = 4*n;" in texts["observed"]
    assert "the model uses the observed mean factor 2/5" in texts["observed"]


def test_scaling_page_says_which_inputs_are_per_rank_and_which_global(tmp_path: Path) -> None:
    from post_fixtures import Assign, Loop, Mpi, Op, Var, write_run

    program = [Var("rank", lambda e: e["__rank"]), Var("nprocs", lambda e: e["__size"]), Var("nx", 10),
               Var("na", 4000), Assign("nbr", "min(rank, 1) + min(nprocs - 1 - rank, 1)"),
               Loop("steps", "3", [Mpi("mpi_isend", "halo", "8*nx", count="nbr"), Op("flop", "spmv", "na/nprocs"),
                                   Op("flop", "stencil", "5*nx")])]
    text = build_report(ma_post.load(write_run(tmp_path / "run", program, size=4)), nprocs=[1, 2, 4, 64])
    inputs = text.split('<ul id="scaling-inputs">')[1].split("</ul>")[0]
    assert "strong scaling in these): <code>na</code>" in inputs
    assert "weak scaling in these): <code>nx</code>" in inputs
    assert "each process count is evaluated over all of its ranks" in inputs
    table = text.split('id="scaling-table"')[1].split("</table>")[0]
    assert "<td>-" not in table.replace("<td>-</td>", "")  # no negative value on the page ("-": none)


@pytest.mark.slow
def test_wide_tables_and_long_formulas_scroll_in_their_own_box(browser: Browser, tmp_path: Path) -> None:
    """At a narrow window, nothing makes the page itself scroll sideways: wide tables, the site tree and long
    formulas scroll in their own boxes, and a formula's box is not much taller than the formula."""
    from post_fixtures import Assign, Loop, Mpi, Op, Var, write_run

    long = "exchange_the_halo_with_the_neighbours_along_z"
    kernels = [Op("flop", f"{long}_kernel_{k}", f"54*nx*ny*nz + {k}*nx*ny + 7*ny*nz + 11*nx*nz + 13*nx + 17*ny",
                  actual=lambda env, k=k: 54 * 10 * 12 * 14 + (k + 1) * 10 * 12) for k in range(6)]
    program = [Var("rank", lambda e: e["__rank"]), Var("nprocs", lambda e: e["__size"]), Var("nx", 10), Var("ny", 12),
               Var("nz", 14), Var("max_iter", 5), Assign("nbr", "min(rank, 1) + min(nprocs - 1 - rank, 1)"),
               Loop("iterations", "max_iter", [
                   Loop("calls", "1 + min(iter, 1)", kernels),
                   *[Mpi("mpi_isend", f"{long}_{k}", f"8*nx*ny*{k + 1}", count="nbr") for k in range(6)]])]
    ts = ma_post.load(write_run(tmp_path / "run", program, size=4))
    page = tmp_path / "report.html"
    page.write_text(build_report(ts, nprocs=[1, 2, 4, 64]))
    browser.call("Emulation.setDeviceMetricsOverride", width=700, height=1000, deviceScaleFactor=1, mobile=False)
    browser.open(page.as_uri())
    found = browser.evaluate("""(() => {
        const scrolls = el => { for (let e = el; e && e !== document.body; e = e.parentElement) {
            const o = getComputedStyle(e).overflowX; if (o === "auto" || o === "scroll") return true; } return false; };
        const wide = [...document.querySelectorAll("table, .formula, pre, #site-tree, .leaf, summary, li, p")]
            .filter(el => el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > innerWidth);
        const formulas = [...document.querySelectorAll(".formula")].map(f => ({
            box: f.getBoundingClientRect().height, math: f.querySelector("math").getBoundingClientRect().height,
            scrolls: f.scrollWidth > f.clientWidth}));
        return {page: document.scrollingElement.scrollWidth, view: innerWidth,
                unscrolled: wide.filter(el => !scrolls(el)).map(el => el.tagName + "#" + el.id + "." + el.className),
                formulas: formulas, cases: document.querySelectorAll(".formula mtable").length,
                attribution: document.querySelectorAll("#attribution-table tr").length};
    })()""")
    assert found["attribution"] > 2 and found["cases"] >= 1  # the wide parts are there, the sums as cases
    assert found["unscrolled"] == [] and found["page"] <= found["view"], found
    assert any(f["scrolls"] for f in found["formulas"])
    for formula in found["formulas"]:  # padding, and a scroll bar where the formula is wider than the page
        assert formula["box"] - formula["math"] <= 30, found["formulas"]
    assert browser.problems() == []


def test_a_formula_too_long_to_read_names_the_command_that_exports_it() -> None:
    import sympy

    from ma_post.report.build import mathml

    small = sympy.Symbol("na") * sympy.Symbol("niter") + 3
    assert "<math" in mathml(small, "flops") and "too-long" not in mathml(small, "flops")
    huge = sympy.Add(*(sympy.Symbol(f"x{k}") * sympy.Symbol("n") for k in range(READABLE_NODES)))
    text = mathml(huge, "time", export="ma export DIR --backend maps --machine m --python OUT")
    assert "<math" not in text
    assert f"<code>time</code> is a formula of more than {READABLE_NODES:,} terms" in text
    assert "<code>ma export DIR --backend maps --machine m --python OUT</code> writes it as code" in text
    assert "<code>a&lt;b</code>" in mathml(huge, "a<b")  # names are escaped
