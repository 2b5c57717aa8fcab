"""Checks of an NPB CG model that hold for every port of it (Python, Fortran): the paper's section 4 numbers."""

from __future__ import annotations

from examples.npb_cg.classes import CLASSES
from examples.npb_cg.study import CGModels, message_sizes, official_comparison
from ma_post.msgdist import MessageClass
from ma_post.validation import Report, SiteResult


def check_flops_against_the_official_count(models: CGModels) -> None:
    """The flop model of the timed loop is within 1 % of NPB's operation count for S to C, and is not that formula."""
    rows = official_comparison(models)
    assert [r[0] for r in rows] == list("SWABC")
    for name, predicted, official, relative in rows:
        assert abs(relative) <= 0.01, (name, predicted, official)
        assert predicted != official  # a model, not a copy of the formula


def check_message_sizes_at_1024_ranks(models: CGModels) -> dict[int, MessageClass]:
    """MA paper 4.1: class C on 1024 processes sends about 65 % of its messages at 8 bytes, the rest over 37 KB."""
    sizes = {round(c.size): c for c in message_sizes(models, 1024)}
    assert set(sizes) == {8, 16, 37500}
    assert 0.55 <= sizes[8].share <= 0.70
    assert sizes[37500].volume_share > 0.99
    return sizes


def check_flops_measured(report: Report, class_name: str, nprocs: int) -> list[SiteResult]:
    """Under the Valgrind tool: the 12 flop sites of the warm-up and of the timed loop measured, each within 1 %
    over all its calls; the block product asserted with NPB's nonzero count, which the real matrix misses."""
    flops = [r for r in report.results if r.site.type == "flop"]
    assert len(flops) == 24
    for result in flops:
        assert result.unmeasured == 0 and result.measured[0] > 0
        assert abs(result.error_rate) < 0.01, (result.site.path, result.error_rate)
    matvec = next(r for r in flops if r.site.path == "conj_loop/conj_grad/cgit/matvec")
    problem = CLASSES[class_name]
    assert matvec.predicted[0] == 2 * problem.na * problem.nonzer * (problem.nonzer + 1) / nprocs
    assert matvec.measured[0] != matvec.predicted[0]
    return flops
