"""Hostile input to the command line and the Python API: every case is a one-line error
(or a :class:`cellcc.CellccError`) naming the option, key or file, never a traceback."""

import pytest
from typer.testing import CliRunner

import cellcc
from cellcc import api, synthetic
from cellcc.cli import app
from helpers import assert_one_line_error

cli = CliRunner()
pytestmark = pytest.mark.usefixtures("native")

SCENARIO = {
    "duration_s": 0.5,
    "downlink": {"rate_mbps": 12.0, "delay_ms": 10.0},
    "uplink": {"rate_mbps": 100.0, "delay_ms": 10.0},
    "flows": [{"scheme": "cubic"}],
}

SCENARIO_TOML = """duration_s = 0.5
downlink = { rate_mbps = 12.0, delay_ms = 10.0 }
uplink = { rate_mbps = 100.0, delay_ms = 10.0 }
[[flows]]
scheme = "cubic"
"""


def invoke(*args):
    return cli.invoke(app, [str(a) for a in args])


def invoke_app(capsys, *args) -> tuple[int, str]:
    """Run the app as ``cellcc`` runs (its argument errors included); ``(code, stderr)``."""
    with pytest.raises(SystemExit) as done:
        app([str(a) for a in args], prog_name="cellcc")
    return int(done.value.code or 0), capsys.readouterr().err


def assert_one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]


# -- traces ---------------------------------------------------------------------------


def test_synth_config_that_is_not_utf8(tmp_path):
    config = tmp_path / "model.toml"
    config.write_bytes(b'model = "constant"\n\xff\xfe = 1\n')
    result = invoke(
        "traces", "synth", "--model", "constant", "--config", config, "--rate-mbps", "5",
        "-o", tmp_path / "x.down",
    )  # fmt: skip
    assert_one_line_error(result, "--config", "model.toml", "UTF-8")


def test_synth_of_no_capacity_is_refused(tmp_path):
    out = tmp_path / "x.down"
    result = invoke("traces", "synth", "--model", "constant", "--rate-mbps", "0", "-o", out)
    assert_one_line_error(result, "--rate-mbps", "> 0")
    assert not out.exists()


def test_synth_preset_longer_than_the_models_allow(tmp_path, capsys):
    argv = ["traces", "synth", "lte-driving", "--duration", "1e9", "--out-dir", tmp_path]
    assert_one_line(*invoke_app(capsys, *argv), "--duration", "3600")
    assert not list(tmp_path.iterdir())


def test_plot_to_an_unknown_image_format(tiny_trace, tmp_path):
    result = invoke("traces", "plot", tiny_trace, "--out", tmp_path / "x.xyz")
    assert_one_line_error(result, "--out", "x.xyz", ".png")


@pytest.mark.parametrize("title", ["$x^$", r"$\foo$"])
def test_plot_title_that_is_bad_mathtext(tiny_trace, tmp_path, title):
    result = invoke("traces", "plot", tiny_trace, "--out", tmp_path / "x.png", "--title", title)
    assert_one_line_error(result, "--title", "mathtext")


def test_plot_of_a_trace_named_like_mathtext(tiny_trace, tmp_path):
    named = tmp_path / "$x^$.down"  # a file name is drawn as written
    named.write_bytes(tiny_trace.read_bytes())
    result = invoke("traces", "plot", named, "--out", tmp_path / "x.png")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("rate", ["1e308", "1e30"])
def test_convert_rates_that_overflow(tmp_path, rate):
    rates = tmp_path / "rates.txt"
    rates.write_text(f"0 {rate}\n1 {rate}\n")
    result = invoke("traces", "convert", rates, "--out", tmp_path / "x.down")
    assert_one_line_error(result, "rates.txt:1", "rate_mbps")


def test_convert_a_trace_too_long(tmp_path):
    rates = tmp_path / "rates.txt"
    rates.write_text("0 1\n1000000000 1\n")
    result = invoke("traces", "convert", rates, "--out", tmp_path / "x.down")
    assert_one_line_error(result, "rates.txt:2", "t_s")


def test_scale_by_a_factor_that_overflows(tiny_trace, tmp_path):
    result = invoke(
        "traces", "scale", tiny_trace, "--factor", "1/99999999999999999999", "--out",
        tmp_path / "x.down",
    )  # fmt: skip
    assert_one_line_error(result, "--factor")


def test_scale_to_more_lines_than_a_trace_may_hold(tiny_trace, tmp_path):
    """The last --factor wins: 1e9 times a trace would need terabytes; refused up front."""
    out = tmp_path / "x.down"
    result = invoke(
        "traces", "scale", "--factor", "2", tiny_trace, "--factor", "1e9", "--out", out,
    )  # fmt: skip
    assert_one_line_error(result, "--factor: 1000000000 would give")
    assert "more than a trace may hold (50,000,000)" in result.output
    assert not out.exists()


def test_convert_to_more_lines_than_a_trace_may_hold(tmp_path):
    """1 Tbit/s for 1000 s is within each bound alone, but 1.7e11 lines together."""
    rates = tmp_path / "r.txt"
    rates.write_text("0 1000000\n1000 1000000\n")
    out = tmp_path / "x.down"
    result = invoke("traces", "convert", rates, "--out", out)
    assert_one_line_error(result, f"{rates}: its rates would give 166,666,666,666 lines")
    assert not out.exists()


def test_download_from_a_mirror_that_is_no_url(tmp_path):
    result = invoke(
        "traces", "download", "--set", "mahimahi", "--only", "TMobile-LTE-short.down",
        "--dest", tmp_path, "--mirror", "garbage",
    )  # fmt: skip
    assert_one_line_error(result, "--mirror", "garbage")


# -- output directories ---------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "{scenario}", "--out", ""],
        ["sweep", "{sweep}", "--out", ""],
        ["reproduce", "no-such-experiment", "--out", ""],
        ["traces", "plot", "{trace}", "--out", ""],
        ["traces", "synth", "lte-driving", "--out-dir", ""],
        ["traces", "download", "--dest", ""],
    ],
)
def test_an_empty_output_path_is_refused(tmp_path, tiny_trace, monkeypatch, capsys, argv):
    monkeypatch.chdir(tmp_path)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO_TOML)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('schemes = ["cubic"]\n[base]\n' + SCENARIO_TOML.split("[[flows]]")[0])
    names = {"scenario": scenario, "sweep": sweep, "trace": tiny_trace}
    before = sorted(p.name for p in tmp_path.iterdir())
    code, err = invoke_app(capsys, *(a.format(**names) for a in argv))
    assert_one_line(code, err, "got an empty string")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_queue_limit_given_twice(tiny_trace, tmp_path):
    result = invoke(
        "compare", "--trace", tiny_trace, "--schemes", "cubic", "--duration", "0.5",
        "--queue", "droptail:packets=10,packets=20", "--out", tmp_path / "c",
    )  # fmt: skip
    assert_one_line_error(result, "--queue", "packets")


@pytest.mark.parametrize("command", ["run", "compare"])
def test_an_unwritable_out_fails_before_simulating(tmp_path, tiny_trace, monkeypatch, command):
    simulated = []
    real = api.simulate

    def counting(*args, **kwargs):
        simulated.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "simulate", counting)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    if command == "run":
        scenario = tmp_path / "s.toml"
        scenario.write_text(SCENARIO_TOML)
        argv = ["run", scenario, "--out", blocker / "out"]
    else:
        argv = ["compare", "--trace", tiny_trace, "--schemes", "cubic", "--duration", "0.5"]
        argv += ["--out", blocker / "out"]
    result = invoke(*argv)
    assert_one_line_error(result, "--out", str(blocker / "out"))
    assert simulated == []


# -- the Python API -------------------------------------------------------------------


def _deep(levels: int) -> dict:
    root: dict = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


def _self_referential() -> dict:
    scenario = dict(SCENARIO)
    scenario["loop"] = scenario
    return scenario


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: cellcc.simulate({**SCENARIO, "extra": _deep(5000)}), "extra"),
        (lambda: cellcc.simulate(_self_referential()), "loop"),
        (lambda: cellcc.simulate(SCENARIO, base_dir=123), "base_dir"),
        (lambda: cellcc.trace_info(None), "path"),
        (lambda: cellcc.simulate({**SCENARIO, "name": "a\udc80"}), "name"),
        (lambda: cellcc.trace_info("a\udc80.down"), "a\\udc80"),
        (lambda: cellcc.validate(SCENARIO, base_dir="d\udc80"), "base_dir"),
        (lambda: synthetic.write_preset("lte-driving", "/nonexistent", duration_s=1e9), "3600"),
    ],
)
def test_api_misuse_raises_cellcc_errors(call, needle):
    with pytest.raises(cellcc.CellccError) as caught:
        call()
    assert needle in str(caught.value)


def test_a_progress_callback_failing_on_its_last_call_is_not_swallowed():
    seen = []

    def progress(done: float) -> None:
        seen.append(done)
        if done >= 1.0:
            raise RuntimeError("the last call")

    with pytest.raises(RuntimeError, match="the last call"):
        cellcc.simulate(SCENARIO, progress=progress)
    assert seen and seen[-1] == 1.0
