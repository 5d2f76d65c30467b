"""Hypothesis strategies for hostile input: scenarios, trace files, sweep files and CLI
argument sets, built from the documented keys (docs/scenarios.md, docs/experiments.md)
and the CLI's own option lists, with the boundary values that broke things before."""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import strategies as st

#: Numbers at and beyond the edges: zero, signs, values that round to zero in ns or bit/s,
#: 32- and 64-bit limits, huge and non-finite.
EDGE_NUMBERS: list[Any] = [
    0, -1, -0.0, 1e-300, 5e-7, 1e-6, 0.001, 0.5, 1, 3, 100, 1e3, 1e6, 1e7, 4294967295,
    4294967296, 2**63, 2**64, 1e300, 1e308, math.inf, -math.inf, math.nan,
]  # fmt: skip

#: Words the schema uses, so that mutations also reach the valid branches.
WORDS = [
    "droptail", "drophead", "codel", "pie", "infinite", "loop", "once", "cubic", "bbr",
    "reno", "c2tcp", "sprout", "verus", "vivace", "fixed", "pf", "rr", "max-throughput",
    "lte-fdd-sr10", "nr-tdd-2.5ms", "normal", "uniform", "exponential", "bernoulli",
    "gilbert-elliott", "mobility", "steps", "constant", "cbr", "onoff", "short_flows",
    "down", "up", "bulk", "rfc", "mahimahi", "", "../../..", "a/b", "\udcff", "x" * 300,
]  # fmt: skip

#: A value of any TOML type, mostly edge numbers and schema words.
hostile_values = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.sampled_from(WORDS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.booleans(),
    st.text(max_size=8),
    st.lists(st.sampled_from([0, 1, 2.5, "a"]), max_size=3),
    st.dictionaries(
        st.sampled_from(["kind", "packets", "x"]), st.sampled_from(EDGE_NUMBERS), max_size=2
    ),
)

TRACE = "traces/lte-stationary.down"
UP_TRACE = "traces/lte-stationary.up"

#: Valid scenarios of every shape the simulator has; cases mutate them.
TEMPLATES: list[dict[str, Any]] = [
    {
        "duration_s": 1.0,
        "downlink": {
            "rate_mbps": 12.0, "delay_ms": 10.0, "queue": {"kind": "droptail", "packets": 50},
        },
        "uplink": {"rate_mbps": 50.0, "delay_ms": 10.0},
        "flows": [{"scheme": "cubic"}],
        "metrics": {"bin_ms": 100.0},
    },
    {
        "duration_s": 1.0,
        "downlink": {
            "trace": TRACE, "mode": "loop", "scale": 1, "delay_ms": 5.0,
            "queue": {"kind": "codel", "target_ms": 5.0, "interval_ms": 100.0},
            "loss": 0.01, "jitter": {"dist": "uniform", "min_ms": 0.0, "max_ms": 2.0},
            "harq": {"bler": 0.1, "max_retx": 3, "rtt_ms": 8.0},
            "outages": [{"start_s": 0.2, "duration_s": 0.1}],
        },
        "uplink": {"trace": UP_TRACE, "queue": {"kind": "pie"}},
        "flows": [{"scheme": "bbr", "start_s": 0.1, "app": {"bytes": 100000}}],
        "metrics": {"bin_ms": 50.0, "packet_log": True, "ack_log": True},
        "tcp": {"mss": 1448, "init_cwnd": 10, "hz": 1000},
    },
    {
        "duration_s": 1.0,
        "downlink": {"synth": {"model": "steps", "base_mbps": 10.0, "duration_s": 5.0}},
        "scheduling": {"preset": "lte-fdd-sr10", "sr_period_ms": 10.0, "grant_delay_ms": 4.0},
        "wired": {"rate_mbps": 24.0, "queue": {"kind": "droptail", "packets": 40}},
        "flows": [{"scheme": "c2tcp"}, {"scheme": "vegas", "direction": "up"}],
        "background": [
            {"source": {"kind": "short_flows", "rate_per_s": 5.0,
                        "size": {"kind": "exponential", "mean": 20000}}},
            {"source": {"kind": "cbr", "rate_mbps": 1.0}},
        ],
    },
    {
        "duration_s": 1.0,
        "cell": {
            "scheduler": "pf", "tti_ms": 1.0, "pf_tc_ttis": 100,
            "ues": [{"trace": TRACE, "queue": {"kind": "droptail", "packets": 100}},
                    {"trace": TRACE}],
        },
        "flows": [{"scheme": "cubic", "ue": 0}, {"scheme": "sprout", "ue": 1}],
    },
]  # fmt: skip

#: Optional keys a case may add (the documented ones templates leave out).
EXTRA_PATHS = [
    ("seed",), ("name",), ("downlink", "scale"), ("downlink", "synth_seed"),
    ("downlink", "queue", "bytes"), ("scheduling", "tti_ms"), ("scheduling", "sr_offset_ms"),
    ("scheduling", "ul_tx_delay_ms"), ("scheduling", "proactive_grant_period_ms"),
    ("scheduling", "dl_every_ttis"), ("scheduling", "tdd"), ("metrics", "bin_ms"),
    ("tcp", "rack"), ("flows", 0, "params", "target_ms"), ("flows", 0, "params", "cwnd"),
    ("background", 0, "source", "stop_s"), ("downlink", "rate_mbps"),
]  # fmt: skip

#: Lists a case may grow (a repeat count for the worker, not a list in the message).
REPEATS = {"flows": [0, 2, 100, 5000, 100000], "cell.ues": [0, 3, 1000, 100000]}


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _set(document: Any, path: tuple[Any, ...], value: Any) -> None:
    node = document
    for step in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(step, {})
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            return  # the path does not exist in this shape: leave the case as it is
        if not isinstance(node, dict | list):
            return
    last = path[-1]
    if isinstance(node, dict) or (
        isinstance(node, list) and isinstance(last, int) and last < len(node)
    ):
        node[last] = value


def _delete(document: Any, path: tuple[Any, ...]) -> None:
    node = document
    for step in path[:-1]:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A template with one to four keys set to hostile values (or removed), sometimes a
    list repeated many times."""
    template = draw(st.sampled_from(TEMPLATES))
    document = copy.deepcopy(template)
    paths = _paths(template) + EXTRA_PATHS
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        path = draw(st.sampled_from(paths))
        if draw(st.integers(0, 9)) == 0:
            _delete(document, path)
        else:
            _set(document, path, draw(hostile_values))
    case: dict[str, Any] = {"scenario": document}
    if draw(st.integers(0, 7)) == 0:
        key = draw(st.sampled_from(sorted(REPEATS)))
        case["repeat"] = {key: draw(st.sampled_from(REPEATS[key]))}
    return case


@st.composite
def trace_files(draw: st.DrawFn) -> dict[str, Any]:
    """Bytes of a trace file: mostly valid lines with hostile ones mixed in."""
    import base64

    line = st.one_of(
        st.integers(min_value=0, max_value=5000).map(str),
        st.sampled_from(
            ["", " ", "-1", "1.5", "0x10", "4294967296", "18446744073709551616", "1e3",
             "abc", "\x00", "\r", "99999999999999999999999999", "\ufeff1", "+1", "1 2"]
        ),
        st.text(max_size=6),
    )  # fmt: skip
    lines = draw(st.lists(line, min_size=0, max_size=60))
    ending = draw(st.sampled_from(["\n", "\r\n", ""]))
    text = "\n".join(lines) + ending
    if draw(st.integers(0, 9)) == 0:
        text = "1" * draw(st.sampled_from([10**3, 10**5, 10**6]))  # one line, no newline
    data = text.encode("utf-8", errors="surrogatepass")
    return {
        "bytes": base64.b64encode(data).decode(),
        "mode": draw(st.sampled_from(["loop", "once"])),
    }


SWEEP_TEMPLATE = """name = {name}
seeds = {seeds}
schemes = {schemes}

[base]
duration_s = {duration}
downlink = {{ rate_mbps = {rate}, queue = {{ kind = "droptail", packets = 50 }} }}

[grid]
"downlink.queue.packets" = {grid}

[report]
view = {view}
metrics = {metrics}
normalise_to = {normalise}
title = {title}

[experiment]
published = {published}
"""

#: TOML literals (some of the wrong type) for each placeholder of SWEEP_TEMPLATE.
SWEEP_LITERALS = {
    "name": ['"w"', '"../../.."', '"a/b"', "5", '""', '"$x"'],
    "seeds": ["[1]", "[1, 2]", '"abc"', "[-1]", "[]", "1", "[1e300]"],
    "schemes": ['["cubic"]', '[["cubic"]]', '"cubic,bbr"', "[]", '["nope"]', "[1]"],
    "duration": ["1.0", "0", "-1", '"x"', "1e308", "nan", "inf"],
    "rate": ["12.0", "0", "1e-300", "1e308", '"x"'],
    "grid": ["[20, 80]", "[]", '["a", "b"]', "[0.1000000001, 0.1000000002]", "20", "[[1]]"],
    "view": ['"table"', '"nope"', "5", '["table", "box"]', "[]"],
    "metrics": ['["throughput_mbps"]', '["nope"]', "5", "[]", '"x"'],
    "normalise": ['"cubic"', '"nope"', "5", '""'],
    "title": ['"T"', '"$\\\\frac{"', '"$x^$"', "5", '""'],
    "published": ["[]", "5", '[{ label = "cubic", throughput_mbps = 1.0 }]', '"x"', "[5]"],
}


@st.composite
def sweep_files(draw: st.DrawFn) -> dict[str, Any]:
    values = {key: draw(st.sampled_from(options)) for key, options in SWEEP_LITERALS.items()}
    text = SWEEP_TEMPLATE.format(**values)
    if draw(st.booleans()):
        # drop a line: missing keys and half tables
        lines = text.splitlines()
        del lines[draw(st.integers(0, len(lines) - 1))]
        text = "\n".join(lines) + "\n"
    return {"text": text}


#: The commands fuzzed (those that change nothing outside their --out and finish in
#: seconds on small input) and, per option, values to draw from.
ARGUMENT_VALUES = [
    "s.toml", "sw.toml", "traces/lte-stationary.down", "c.csv", "missing.toml", "",
    "/dev/zero", ".", "traces", "0", "-1", "1e-300", "1e9", "nan", "inf", "abc",
    "out/x", "out/x.xyz", "$\\frac{", "cubic", "cubic,bbr", "nope",
    "droptail:packets=10,packets=20", "droptail:packets=0", "codel",
    "downlink.queue.packets=5", "flows[9].scheme=1", "k=",
    "lte-stationary", "mobility", "\udcff", "a" * 5000,
]  # fmt: skip

COMMANDS: dict[tuple[str, ...], list[str]] = {
    ("run",): ["FILE", "--seed", "--out", "--duration", "--set"],
    ("compare",): ["--trace", "--schemes", "--delay-ms", "--queue", "--duration", "--seed",
                   "--runs", "--bin-ms", "--out"],
    ("schemes",): ["--names", "--json"],
    ("analyze",): ["FILE", "--out", "--bin-ms", "--title"],
    ("traces", "info"): ["FILE"],
    ("traces", "synth"): ["PRESET", "--model", "--out", "--seed", "--duration", "--speed-kmh",
                          "--rate-mbps", "--base-mbps", "--factor", "--param", "--config"],
    ("traces", "plot"): ["FILE", "--out", "--bin-ms", "--title"],
    ("traces", "convert"): ["FILE", "--out", "--format", "--column", "--duration", "--max-gap-s"],
    ("traces", "scale"): ["FILE", "--factor", "--out"],
    ("experiments", "list"): ["--catalogue"],
}  # fmt: skip

FLAGS = {"--names", "--json"}


@st.composite
def cli_arguments(draw: st.DrawFn) -> dict[str, Any]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    argv = list(command)
    for option in draw(st.lists(st.sampled_from(COMMANDS[command]), max_size=5)):
        if option in FLAGS:
            argv.append(option)
        elif option.isupper():
            argv.append(draw(st.sampled_from(ARGUMENT_VALUES)))
        else:
            argv += [option, draw(st.sampled_from(ARGUMENT_VALUES))]
    if "--duration" not in argv and command in (("run",), ("compare",)):
        argv += ["--duration", "1"]  # keep the accepted cases short
    if command == ("compare",) and "--schemes" not in argv:
        argv += ["--schemes", "cubic"]
    return {"argv": argv}


KINDS = {
    "scenario": scenarios(),
    "trace": trace_files(),
    "sweep": sweep_files(),
    "cli": cli_arguments(),
}
