"""Reproduction scorecards: the claims schema, their evaluation and intervals, every
catalogue entry's claims, and docs/reproduction.md rendered from `--quick` results."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from cellcc import ScenarioError, catalogue, intervals, scorecard
from cellcc.claims import check_claims, parse_claims
from cellcc.cli import app
from cellcc.sweep import expand, load_sweep
from cellcc.sweep_report import report_options

cli = CliRunner()
pytestmark = pytest.mark.usefixtures("native")

PUBLISHED = [{"label": "a", "throughput_mbps": 10.0}, {"label": "b", "throughput_mbps": 5.0}]


def _claims(*tables: dict, published: list | None = None) -> list:
    experiment = {
        "claims": list(tables),
        "published": PUBLISHED if published is None else published,
    }
    return parse_claims(experiment, "entry.toml")


def _order(**extra) -> dict:
    return {
        "id": "a-below-b",
        "text": "a is below b",
        "kind": "order",
        "metric": "qdelay_mean_ms",
        "label": "a",
        "than": "b",
        "relation": "below",
    } | extra


# -- the schema -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "key", "message"),
    [
        (_order(bogus=1), "experiment.claims[0].bogus", "unknown key"),
        (_order(text=""), "experiment.claims[0].text", "missing"),
        (_order(id="Not An Id"), "experiment.claims[0].id", "lower-case"),
        (_order(kind="rank"), "experiment.claims[0].kind", "value, order, ratio"),
        (_order(relation="equal"), "experiment.claims[0].relation", "below, above"),
        (_order(factor=0), "experiment.claims[0].factor", "number > 0"),
        (_order(paper=1.0), "experiment.claims[0].paper", "does not apply to an order claim"),
        (_order(label=[]), "experiment.claims[0].label", "missing"),
        (_order(where=["trace"]), "experiment.claims[0].where", "table of parameter columns"),
        (_order(than={"labl": "b"}), "experiment.claims[0].than.labl", "unknown key"),
        (_order(than={"metric": "qdelay_mean_ms"}), "experiment.claims[0].than", "with itself"),
        (
            {k: v for k, v in _order().items() if k != "than"},
            "experiment.claims[0].than",
            "missing",
        ),
        (
            {"id": "v", "text": "t", "kind": "value", "metric": "owd_mean_ms", "label": "a"},
            "experiment.claims[0].paper",
            "no [[experiment.published]] row gives owd_mean_ms for 'a'",
        ),
        (
            {
                "id": "v",
                "text": "t",
                "kind": "value",
                "metric": "throughput_mbps",
                "label": "a",
                "tolerance": 0.1,
                "tolerance_abs": 1.0,
            },
            "experiment.claims[0].tolerance_abs",
            "either",
        ),
        (
            {
                "id": "v",
                "text": "t",
                "kind": "value",
                "metric": "throughput_mbps",
                "label": "a",
                "relation": "above",
                "tolerance": 0.1,
            },
            "experiment.claims[0].tolerance",
            "threshold",
        ),
        (
            {
                "id": "r",
                "text": "t",
                "kind": "ratio",
                "metric": "owd_mean_ms",
                "label": "a",
                "than": "b",
            },
            "experiment.claims[0].paper",
            "the paper's ratio",
        ),
    ],
)
def test_schema_errors_name_the_file_and_the_key(table, key, message):
    with pytest.raises(ScenarioError) as error:
        _claims(table)
    assert str(error.value).startswith(f"entry.toml: {key}: "), str(error.value)
    assert message in str(error.value)


def test_duplicate_ids_and_non_table_claims_are_rejected():
    with pytest.raises(ScenarioError, match=r"claims\[1\]\.id: duplicate id 'a-below-b'"):
        _claims(_order(), _order())
    with pytest.raises(ScenarioError, match=r"experiment\.claims: expected an array of tables"):
        parse_claims({"claims": "a below b"}, "entry.toml")


def test_a_catalogue_file_with_a_bad_claim_fails_to_load(tmp_path):
    source = catalogue.find("cesar-fig6").path.read_text(encoding="utf-8")
    broken = source.replace(
        'metric = "cc.su_ms"\nlabel = "cesar"', 'metric = "cc.su_ms"\nlable = "x"'
    )
    assert broken != source
    (tmp_path / "broken.toml").write_text(broken, encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"broken.toml: experiment.claims\[0\].lable: unknown"):
        catalogue.entries(tmp_path)


def _sweep(claims: list[dict], published: list | None = None):
    return expand(
        {
            "base": {"duration_s": 1.0, "downlink": {"rate_mbps": 5.0}, "flows": [{}]},
            "schemes": [{"scheme": "cubic", "label": "a"}, {"scheme": "bbr", "label": "b"}],
            "grid": {"downlink.delay_ms": [10.0, 20.0]},
            "report": {"metrics": ["throughput_mbps", "qdelay_mean_ms"]},
            "experiment": {"claims": claims, "published": published or PUBLISHED},
        },
        source="sweep.toml",
    )


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        ({"label": "c"}, "label", "unknown label 'c'; expected one of: a, b"),
        ({"than": "c"}, "than", "unknown label 'c'"),
        ({"metric": "owd_p95_ms"}, "metric", "not a metric of the report"),
        ({"where": {"trace": "x"}}, "where.trace", "not a parameter column"),
        ({"where": {"downlink.delay_ms": 30}}, "where.downlink.delay_ms", "no run of 'a' has"),
        ({"each": ["seed"]}, "each", "not a parameter column"),
    ],
)
def test_claims_are_checked_against_the_sweep(change, key, message):
    sweep = _sweep([_order(**change)])
    claims = parse_claims(sweep.experiment, sweep.source)
    with pytest.raises(ScenarioError) as error:
        check_claims(claims, sweep, report_options(sweep))
    assert str(error.value).startswith(f"sweep.toml: experiment.claims[0].{key}: ")
    assert message in str(error.value)


# -- evaluation -------------------------------------------------------------------------


def _results() -> pd.DataFrame:
    """Two labels on two traces, two seeds each; flow 0 rows (and an aggregate row)."""
    rows = []
    values = {"a": [9.0, 11.0, 10.0, 12.0], "b": [4.0, 6.0, 5.0, 5.0]}
    delays = {"a": [20.0, 30.0, 25.0, 25.0], "b": [100.0, 120.0, 110.0, 90.0]}
    index = 0
    for label in ("a", "b"):
        for i, (trace, seed) in enumerate([("t1", 1), ("t1", 2), ("t2", 1), ("t2", 2)]):
            for flow in (0, -1):
                rows.append(
                    {
                        "run_index": index, "seed": seed, "label": label, "trace": trace,
                        "flow": flow, "throughput_mbps": values[label][i],
                        "qdelay_mean_ms": delays[label][i],
                    }
                )  # fmt: skip
            index += 1
    return pd.DataFrame.from_records(rows)


def _evaluate(*tables: dict, results: pd.DataFrame | None = None, **options) -> list[dict]:
    claims = _claims(*tables)
    frame = _results() if results is None else results
    return scorecard.evaluate(
        claims, frame, context=["trace", "seed"], published=PUBLISHED, **options
    )


def _value(label: str, **extra) -> dict:
    return {"id": f"v-{label}", "text": "t", "kind": "value", "metric": "throughput_mbps",
            "label": label} | extra  # fmt: skip


def test_value_claims_hold_within_the_tolerance_and_fail_outside():
    (a,) = _evaluate(_value("a"))  # ours 10.5, paper 10 (published), ±20 %
    assert a["ours"] == pytest.approx(10.5) and a["paper"] == 10.0 and a["holds"] is True
    (b,) = _evaluate(_value("b", paper=4.0))  # ours 5.0 against 4.0: +25 %
    assert b["holds"] is False and b["tolerance"] == "±20 %"
    (tight,) = _evaluate(_value("a", tolerance_abs=0.4))  # |10.5 − 10| > 0.4
    assert tight["holds"] is False and tight["tolerance"] == "±0.4"
    (loose,) = _evaluate(_value("b", paper=4.0, tolerance=0.3))
    assert loose["holds"] is True
    (threshold,) = _evaluate(_value("a", relation="above", paper=10.0))
    assert threshold["holds"] is True and scorecard.paper_text(threshold) == "> 10"


def test_interval_over_runs_is_the_t_interval_of_the_mean():
    (row,) = _evaluate(_value("a"))
    values = np.array([9.0, 11.0, 10.0, 12.0])
    # t_{0.975,3} = 3.1824, s = 1.2910: half-width 3.1824 × 1.2910 / 2 = 2.0543.
    half = 3.1824 * values.std(ddof=1) / 2
    assert half == pytest.approx(2.0543, abs=1e-4)
    # The table's four digits: within 1e-4 of the exact quantile times s / 2.
    expected = (10.5 - half, 10.5 + half)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(expected, abs=1e-4)
    assert row["ci_method"] == "runs" and row["ci_n"] == 4
    assert row["paper_in_ci"] is True  # 10 in [8.45, 12.55]
    assert scorecard.ci_text(row) == "4 runs"


def test_order_claims_compare_the_ratio_of_the_means():
    (below,) = _evaluate(_order())  # a's delay 25 against b's 105
    assert below["ours"] == pytest.approx(25 / 105) and below["holds"] is True
    (factor,) = _evaluate(_order(factor=0.2))  # 0.238 is not below 0.2
    assert factor["holds"] is False
    (above,) = _evaluate(_order(relation="above"))
    assert above["holds"] is False
    assert scorecard.paper_text(factor) == "< 0.2×"
    # Several labels and compared labels: one row each.
    rows = _evaluate(_order(label=["a", "b"], than=["b", "a"], relation="below", id="all"))
    assert [(r["subject"], r["reference"]) for r in rows] == [
        ("a", "b"), ("a", "a"), ("b", "b"), ("b", "a"),
    ]  # fmt: skip


def test_ratio_interval_is_the_paired_delta_method():
    (row,) = _evaluate(
        {"id": "r", "text": "t", "kind": "ratio", "metric": "throughput_mbps", "label": "a",
         "than": "b"}
    )  # fmt: skip
    # Paper ratio from the published rows: 10 / 5.
    assert row["paper"] == pytest.approx(2.0)
    a = np.array([9.0, 11.0, 10.0, 12.0])  # runs sorted by (trace, seed) on both sides
    b = np.array([4.0, 6.0, 5.0, 5.0])
    ratio = a.mean() / b.mean()
    cov = np.cov(a, b, ddof=1)[0, 1]
    rel2 = a.var(ddof=1) / (4 * a.mean() ** 2) + b.var(ddof=1) / (4 * b.mean() ** 2)
    rel2 -= 2 * cov / (4 * a.mean() * b.mean())
    half = 3.1824 * math.sqrt(rel2)  # on the log scale
    assert row["ours"] == pytest.approx(ratio)
    expected = (ratio * math.exp(-half), ratio * math.exp(half))
    # The table's t to four digits: the bounds agree to 1e-5 relative.
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(expected, rel=1e-5)
    assert row["holds"] is True  # 2.1 against 2.0 ± 20 %


def test_where_each_and_normalisation_select_as_the_report_averages():
    rows = _evaluate(_value("a", paper=10.0, each=["trace"]))
    assert [(r["subject"], r["each"], r["ours"]) for r in rows] == [
        ("a", "trace=t1", pytest.approx(10.0)),
        ("a", "trace=t2", pytest.approx(11.0)),
    ]
    assert scorecard.claim_text(rows[1]) == "t (a; trace=t2)"
    (where,) = _evaluate(_value("a", paper=10.0, where={"trace": "t1"}))
    assert where["subject"] == "a [trace=t1]" and where["each"] == ""
    # Normalised to b in each (trace, seed): a/b = 2.25, 1.833, 2, 2.4 → mean 2.121.
    (norm,) = _evaluate(_value("a", paper=2.0), normalise_to="b", group=["label"])
    assert norm["ours"] == pytest.approx(np.mean([9 / 4, 11 / 6, 10 / 5, 12 / 5]))
    # A label without runs cannot be evaluated.
    (missing,) = _evaluate(_value("a", paper=1.0, where={"trace": "t9"}))
    assert missing["holds"] is None and missing["ours"] is None
    assert scorecard.counts([missing])["not_evaluated"] == 1


def test_percentile_over_runs_gets_an_order_statistics_interval():
    units = intervals.Units(np.arange(1.0, 51.0), tuple(range(50)), "runs", 25.0)
    interval = intervals.quantile_interval(units, float(np.quantile(units.samples, 0.25)))
    assert interval is not None and interval.low < 13 < interval.high
    # Binomial(50, 0.25): ranks 7 and 19 cover 95 % or more.
    assert interval.low >= 6 and interval.high <= 20
    small = intervals.Units(np.array([1.0, 2.0]), (0, 1), "runs", 25.0)
    assert intervals.quantile_interval(small, 1.25) is None


def test_t_quantile_matches_the_printed_table():
    # Student's t, two-sided 95 %, from a printed table.
    assert intervals.t_quantile(1) == pytest.approx(12.7062, abs=1e-4)
    assert intervals.t_quantile(9) == pytest.approx(2.2622, abs=1e-4)
    assert intervals.t_quantile(40) == pytest.approx(2.0211, abs=1e-4)
    assert intervals.t_quantile(1000) == pytest.approx(1.9623, abs=1e-4)


def test_a_single_run_gets_batch_means_over_its_phases():
    # 20 s of 0.5 s bins; flow 0's throughput is k Mbit/s in phase k (0..9), flow 1 half.
    times = np.arange(0.0, 20.0, 0.5)
    phase = (times // 2).astype(int)
    series = pd.concat(
        [
            pd.DataFrame({"flow": 0, "t_s": times, "throughput_mbps": phase * 1.0,
                          "egress_mbps": 1.0, "qdelay_ms": 10.0 + phase}),
            pd.DataFrame({"flow": 1, "t_s": times, "throughput_mbps": phase * 0.5,
                          "egress_mbps": 1.0, "qdelay_ms": 10.0}),
            pd.DataFrame({"flow": -1, "t_s": times, "capacity_mbps": 10.0}),
        ]
    )  # fmt: skip
    table = intervals.phase_table(series)
    flow0 = table[table["flow"] == 0].set_index("phase")
    assert list(flow0["throughput_mbps"]) == [float(k) for k in range(10)]
    assert list(flow0["qdelay_mean_ms"]) == [10.0 + k for k in range(10)]
    assert flow0.loc[3, "utilisation"] == pytest.approx(0.1)
    results = pd.DataFrame(
        {"run_index": [0, 0], "flow": [0, 1], "start_s": [0.0, 0.0], "label": "a", "seed": 1,
         "throughput_mbps": [4.5, 2.25], "flow1_mbps": [2.25, np.nan]}
    )  # fmt: skip
    phases = scorecard.phase_metrics(table.assign(run_index=0), results)
    claims = _claims(_value("a", paper=4.0))
    (row,) = scorecard.evaluate(claims, results, phases=phases, published=PUBLISHED)
    # Phases 0..9: s = 3.0277, t_{0.975,9} = 2.2622: half-width 2.166 around the run's 4.5.
    half = 2.2622 * np.std(np.arange(10.0), ddof=1) / math.sqrt(10)
    assert row["ci_method"] == "phases" and row["ci_n"] == 10
    # The table's t to four digits: the bounds agree within 1e-3.
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((4.5 - half, 4.5 + half), abs=1e-3)
    # Derived metrics per phase: flow 0 against flow 1 (the same run), paired phases.
    (ratio,) = scorecard.evaluate(
        _claims(_order(metric="throughput_mbps", than={"metric": "flow1_mbps"},
                       relation="above", factor=1.5)),
        results, phases=phases,
    )  # fmt: skip
    assert ratio["ours"] == pytest.approx(2.0) and ratio["holds"] is True
    assert ratio["ci_method"] == "phases"
    assert ratio["ci_low"] == pytest.approx(2.0) and ratio["ci_high"] == pytest.approx(2.0)


def test_display_frame_reads_as_a_scorecard():
    rows = _evaluate(_value("a"), _order())
    frame = scorecard.display_frame(rows)
    assert list(frame.columns) == [
        "claim", "metric", "ours [95 % CI]", "CI over", "paper", "tolerance", "paper in CI",
        "holds", "why",
    ]  # fmt: skip
    assert list(frame["holds"]) == ["✔", "✔"]
    assert frame["ours [95 % CI]"].iloc[1].startswith("0.238×")


# -- the catalogue ----------------------------------------------------------------------


@pytest.mark.parametrize("entry", catalogue.entries(), ids=lambda e: e.id)
def test_every_catalogue_entry_states_claims_about_its_own_labels_and_metrics(shared_traces, entry):
    assert entry.claims >= 1, f"{entry.id} states no claims"
    sweep = load_sweep(entry.path)
    claims = parse_claims(sweep.experiment, sweep.source)
    assert len(claims) == entry.claims
    check_claims(claims, sweep, report_options(sweep))  # raises naming the claim's key
    assert all(claim.text and claim.id for claim in claims)


# -- the generator ----------------------------------------------------------------------


@pytest.mark.slow
def test_docs_are_generated_from_quick_results(shared_traces, tmp_path):
    """`cellcc reproduce --quick` on two small entries, then `cellcc experiments docs`:
    the scorecards land in the reports, scorecard.json, the terminal and the docs."""
    out = tmp_path / "reproduce"
    for entry_id in ("cesar-fig6", "c2tcp-ifip-fig2"):
        result = cli.invoke(app, ["reproduce", entry_id, "--quick", "--out", str(out), "-j", "2"])
        assert result.exit_code == 0, result.output
        assert f"{entry_id}: " in result.stdout and "claims hold" in result.stdout
        card = json.loads((out / entry_id / scorecard.SCORECARD_FILE).read_text())
        assert card["quick"] is True and card["claims"]
        page = (out / entry_id / "index.html").read_text(encoding="utf-8")
        assert page.index("Scorecard:") < page.index("Regenerate this report")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.index("Scorecard:") < index.index("<h2>Experiments</h2>")
    docs = tmp_path / "reproduction.md"
    result = cli.invoke(app, ["experiments", "docs", "--results", str(out), "--out", str(docs)])
    assert result.exit_code == 0, result.output
    text = docs.read_text(encoding="utf-8")
    for entry_id in ("cesar-fig6", "c2tcp-ifip-fig2"):
        assert f"(`{entry_id}`)" in text
    section = text[text.index("(`c2tcp-ifip-fig2`)") :]
    table = section[section.index("| claim | metric | ours [95 % CI] |") :].split("\n\n")[0]
    rows = table.splitlines()[2:]  # after the header and its rule
    assert len(rows) == 3, table  # the entry's three claims
    assert all(line.rstrip(" |").endswith(("✔", "✘")) for line in rows), table
    assert "10 phases" in section  # one run per label: batch means over its phases
    assert "Wall time: " in section and " s for 2 runs" in section
    assert "## Not yet in the catalogue" in text and "{{" not in text
    assert "Catalogue entries not in these results:" in text
    missing = cli.invoke(app, ["experiments", "docs", "--results", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no such results directory" in missing.output
