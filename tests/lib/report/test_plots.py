"""Every plotted estimate carries its CI (error bars), and legends sit outside the data area."""

import pandas as pd
import pytest

from spacelm.lib.report import plots


def _outside(fig, ax):
    """True when no legend of the figure overlaps the plotting area of `ax`."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = ax.get_window_extent(r)
    legends = [a.get_legend() for a in fig.axes if a.get_legend()] + list(fig.legends)
    assert legends
    return all(not leg.get_window_extent(r).overlaps(box) for leg in legends)


def _errorbars(ax):
    return [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]


def test_recall_curve_has_cis_and_an_outside_legend(tmp_path):
    rows = [
        {"qid": f"q{i}", "system": s, "recall@3": (i + j) % 2, "recall@10": 1.0}
        for i in range(8)
        for j, s in enumerate(["bm25", "dense"])
    ]
    fig = plots.recall_curve(pd.DataFrame(rows), [3, 10], tmp_path / "r.png", n_boot=50)
    ax = fig.axes[0]
    assert len(_errorbars(ax)) == 2 and _outside(fig, ax) and (tmp_path / "r.png").is_file()


def test_grade_distribution_stacked_shares_on_one_axis(tmp_path):
    shares = {0: 10.0, 1: 20.0, 2: 30.0, 3: 40.0}
    rows = [
        {
            "retriever": r,
            "stage": st,
            "top_k": k,
            "grade": g,
            "percent": shares[g],
            "n": 40,
            "n_questions": 12 if k == 3 else 6,  # fewer questions graded to top-10
            "ci_low": shares[g] - 5,
            "ci_high": shares[g] + 5,
            "missing": 0,
        }
        for r in ("bm25", "dense")
        for st in ("retrieved", "reranked")
        for k in (3, 10)
        for g in range(4)
    ]
    fig = plots.grade_distribution(pd.DataFrame(rows), tmp_path / "g.png")
    (ax,) = fig.axes  # one shared 0-100% axis, not a panel per grade
    assert ax.get_ylim() == (0.0, 100.0)
    # each bar says its own n: 12 questions at top-3, 6 at top-10 (never the largest n for every bar)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert sum(t.endswith("n=12") for t in ticks) == 4 and sum(t.endswith("n=6") for t in ticks) == 4
    assert "n=" not in ax.get_title()
    assert len(_errorbars(ax)) == 2 * 2 * 2 * 4  # every grade's share of every bar has its CI
    filled = [p for p in ax.patches if p.get_fill()]
    tops = sorted({round(p.get_y() + p.get_height(), 6) for p in filled})
    assert tops == [10.0, 30.0, 60.0, 100.0]  # stacked: each segment starts where the one below ends
    from matplotlib.colors import to_hex

    assert {to_hex(p.get_facecolor()) for p in filled} == set(plots.GRADE_COLORS.values())
    assert {to_hex(p.get_edgecolor()) for p in filled} == {plots.SYSTEM_COLORS["bm25"], plots.SYSTEM_COLORS["dense"]}
    assert _outside(fig, ax)


def _per_task_table1():
    rows = []
    for task in ("analysis", "direct_qa"):
        for st in ("retrieved", "reranked"):
            for k in (3, 5):
                rows.append(
                    {"retriever": "bm25", "stage": st, "top_k": k, "task": task, "questions": 7, "passages": 7 * k}
                    | {"pct_grade_3": 40.0, "pct_grade_3_ci_low": 20.0, "pct_grade_3_ci_high": 61.0}
                )
    return pd.DataFrame(rows)


def test_per_task_panels_table1_points_carry_cis_and_n(tmp_path):
    fig = plots.per_task_panels(_per_task_table1(), "pct_grade_3", "% at grade 3", tmp_path / "t1.png")
    assert len(fig.axes) == 2 and (tmp_path / "t1.png").is_file()
    for ax in fig.axes:
        bars = _errorbars(ax)
        assert len(bars) == 2 and "n=7" in ax.get_title()
        segments = bars[0].lines[2][0].get_segments()  # the vertical bars of the first line
        assert [(round(s[0][1], 6), round(s[1][1], 6)) for s in segments] == [(20.0, 61.0)] * 2
        assert ax.get_ylim()[0] == 0
    assert "95% CI" in fig.axes[0].get_ylabel()


def test_per_task_panels_table2_scores_from_1_with_cis(tmp_path):
    df = pd.DataFrame(
        [
            {"setting": s, "task": "analysis", "n": n, "faithfulness": 3.0, "faithfulness_ci_low": 2.5}
            | {"faithfulness_ci_high": 3.75}
            for s, n in (("standard", 6), ("3_wrong", 5))
        ]
    )
    fig = plots.per_task_panels(df, "faithfulness", "mean faithfulness (1-5)", tmp_path / "t2.png", group="setting")
    (ax,) = fig.axes
    assert ax.get_ylim()[0] == 1  # a 1-5 rubric's axis starts at its lowest score
    (bars,) = _errorbars(ax)
    assert [(s[0][1], s[1][1]) for s in bars.lines[2][0].get_segments()] == [(2.5, 3.75)] * 2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["standard\n(n=6)", "3_wrong\n(n=5)"]


def test_answer_plots_with_cis(tmp_path):
    long = pd.DataFrame(
        [
            {"metric": m, "setting": s, "mean": 4.0, "std": 1.0, "n": 10, "ci_low": 3.5, "ci_high": 4.4}
            for m in ("faithfulness", "relevance")
            for s in ("standard", "3_wrong")
        ]
    )
    fig = plots.score_distributions(long, tmp_path / "s.png")
    assert len(_errorbars(fig.axes[0])) == 2 and _outside(fig, fig.axes[0])
    settings = [
        {"name": "standard", "n_wrong": 0, "keep_relevant": True},
        {"name": "3_wrong", "n_wrong": 3, "keep_relevant": True},
        {"name": "5_wrong", "n_wrong": 5, "keep_relevant": False},
    ]
    items = [
        {"pipeline": "table2", "setting": s["name"], "scores": {"faithfulness": 3 + i % 3}, "refusal": i % 4 == 0}
        for s in settings
        for i in range(8)
    ]
    fig = plots.noise_curve(items, settings, tmp_path / "n.png", n_boot=50)
    assert len(_errorbars(fig.axes[0])) == 1 and len(_errorbars(fig.axes[1])) == 2
    assert _outside(fig, fig.axes[0]) and _outside(fig, fig.axes[1])


def test_refusal_sweep_wilson_intervals(tmp_path):
    from spacelm.lib.stats import wilson_ci

    sweep = [{"threshold": t / 4, "false_refusal_rate": t / 4, "refusal_recall": min(1.0, t / 3)} for t in range(5)]
    fig = plots.refusal_sweep(sweep, {"gate off": (0.1, 0.2), "gate on": (0.3, 0.7)}, 20, 10, tmp_path / "f.png")
    ax = fig.axes[0]
    assert len(_errorbars(ax)) == 3 and _outside(fig, ax)
    lo, hi = wilson_ci(7, 10)
    assert lo < 0.7 < hi and lo == pytest.approx(0.397, abs=0.01)


def test_intervals_beside_the_point_or_missing_do_not_break_a_plot(tmp_path):
    rows = [
        {
            "retriever": "bm25",
            "stage": st,
            "top_k": 3,
            "grade": g,
            "percent": 10.0,
            "n": 3,
            "ci_low": 12.0 if g == 0 else float("nan"),
            "ci_high": 30.0,
            "missing": 0,
        }
        for st in ("retrieved", "reranked")
        for g in range(4)
    ]
    plots.grade_distribution(pd.DataFrame(rows), tmp_path / "g.png")  # an interval above its point: bar of 0
    assert (tmp_path / "g.png").is_file()
    below, above = plots._yerr([10.0, 5.0], [12.0, float("nan")], [30.0, 6.0])
    assert list(below) == [0.0, 0.0] and list(above) == [20.0, 1.0]
