"""The broad ``cellcc validate``: every scheme on several traces and buffers, with
repeated kernel runs per pair summarised as a median and a spread.

One *pair* is (buffer, scheme, trace). Each kernel run of a pair is its own result, the
simulator's start-time spread of a pair another, and every one is written atomically
before the next starts, so an interrupted validation resumes where it stopped::

    <out>/traces/                                 traces converted for this run (Irish 5G)
    <out>/runs/<buffer>/<scheme>--<trace>/run-<k>.json   kernel run k and its aligned simulation
    <out>/runs/<buffer>/<scheme>--<trace>/run-<k>/       its logs and time series
    <out>/runs/<buffer>/<scheme>--<trace>/sim-spread.json  simulator over start times
    <out>/validation.{csv,json}, runs.csv         one row per pair; one row per kernel run

A run file that does not parse, or lacks what a finished run writes, is not a finished
run: it is redone (the atomic writer never leaves one, but a disk that filled up or an
older writer may). :mod:`cellcc.validation_report` turns the table into markdown, plots and
the generated section of ``docs/validation.md``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from cellcc import realpath, traces, validation
from cellcc._native import UsageError
from cellcc.results import json_ready, write_csv_atomic, write_json_atomic, write_text_atomic

# -- buffers ------------------------------------------------------------------------------

_BUFFER = re.compile(r"(?P<count>[0-9]+)(?P<unit>p|B|KB|kB|MB)")
_BYTE_UNITS = {"B": 1, "KB": 1000, "kB": 1000, "MB": 1_000_000}
"""Decimal units: 150 KB is 150 000 bytes, as the issue and Mahimahi's byte queues count."""


@dataclass(frozen=True)
class Buffer:
    """One drop-tail limit, applied to both directions."""

    packets: int | None = None
    bytes: int | None = None

    @property
    def label(self) -> str:
        """``1000p`` or ``150KB``: the spelling of ``--buffers`` and of directory names."""
        if self.packets is not None:
            return f"{self.packets}p"
        assert self.bytes is not None  # parse_buffers and from_setup give one of the two
        for unit, size in (("MB", 1_000_000), ("KB", 1000)):
            if self.bytes % size == 0:
                return f"{self.bytes // size}{unit}"
        return f"{self.bytes}B"

    def setup(self, base: validation.Setup) -> validation.Setup:
        """``base`` with this queue."""
        return replace(base, queue_packets=self.packets, queue_bytes=self.bytes)

    @classmethod
    def from_setup(cls, setup: validation.Setup) -> Buffer:
        if setup.queue_packets is not None and setup.queue_bytes is not None:
            raise UsageError("a validation buffer is a packet or a byte limit, not both")
        return cls(packets=setup.queue_packets, bytes=setup.queue_bytes)


def parse_buffers(text: str, *, option: str = "--buffers") -> list[Buffer]:
    """``150KB,1000p`` → buffers. Units: ``p`` (packets), ``B``, ``KB``/``kB``, ``MB``
    (decimal bytes); a count is a whole number ≥ 1. Errors name ``option`` and the item."""
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise UsageError(
            f"{option}: expected a comma-separated list like 150KB,1000p, got {text!r}"
        )
    buffers: list[Buffer] = []
    for item in items:
        match = _BUFFER.fullmatch(item)
        if match is None:
            raise UsageError(
                f"{option}: {item!r} is not a buffer; write a whole number and a unit: "
                "p (packets), B, KB or MB (decimal bytes), e.g. 1000p or 150KB"
            )
        count, unit = int(match["count"]), match["unit"]
        if count < 1:
            raise UsageError(f"{option}: {item!r}: a buffer holds at least 1 {unit}")
        buffer = Buffer(packets=count) if unit == "p" else Buffer(bytes=count * _BYTE_UNITS[unit])
        if buffer in buffers:
            raise UsageError(f"{option}: {item!r} is given twice")
        buffers.append(buffer)
    return buffers


# -- traces -------------------------------------------------------------------------------

BOSTON_PAIRS = (
    "ATT-LTE-driving-2016",
    "ATT-LTE-driving",
    "TMobile-LTE-short",
    "TMobile-UMTS-driving",
    "Verizon-EVDO-driving",
    "Verizon-LTE-short",
)
"""Every Mahimahi (Sprout, "Boston") trace of the shared set with both a ``.down`` and an
``.up`` file (``TMobile-LTE-driving`` has no uplink). Traces longer than the flow are
used from their start for ``--duration``."""


@dataclass(frozen=True)
class IrishTrace:
    """A trace converted from the Irish 5G dataset's CSVs inside the command."""

    csv: str
    """Path under the dataset's ``Download`` directory."""
    uplink_mbps: float
    """Constant uplink rate: the CSV's ``UL_bitrate`` during a download is what the phone
    sent (mostly ACKs), not what the uplink could carry."""


IRISH_TRACES: dict[str, IrishTrace] = {
    # Static, all rows 5G; after the 6 s idle lead-in every log has, 21-24 Mbit/s with a
    # 3 s dip to 3-5 Mbit/s and a 2 s outage inside the first 30 s (mean 18 Mbit/s).
    # 12 Mbit/s uplink: one 1500-byte opportunity per millisecond.
    "Ireland-5G-static": IrishTrace("Static/B_2020.02.14_13.21.26.csv", uplink_mbps=12.0),
}

IRISH_LEAD_IN_MBPS = 1.0
"""The download of an Irish 5G log starts at its first second of at least this rate: every
log of the set opens with 6-13 s of the logger alone, readings of 0-0.8 Mbit/s, which are
cut so that the flow starts with the download."""

PRESETS: dict[str, dict[str, Any]] = {
    "broad": {
        "schemes": validation.DEFAULT_SCHEMES,
        "traces": (*BOSTON_PAIRS, *IRISH_TRACES),
        "buffers": "150KB,1000p",
        "runs": 3,
    }
}
"""Named option sets of ``cellcc validate --preset``; an option given explicitly wins."""


@dataclass(frozen=True)
class TracePair:
    """A trace's name and its two files."""

    name: str
    down: Path
    up: Path


def convert_irish(name: str, spec: IrishTrace, irish_dir: Path, dest: Path) -> TracePair:
    """Convert ``spec`` with :func:`cellcc.traces.convert` into ``dest``: the downlink
    from ``DL_bitrate`` without its lead-in (the whole seconds before the first one of at
    least :data:`IRISH_LEAD_IN_MBPS`: the logger starts before the download), and a
    constant-rate uplink as long as the downlink's period. A ``<name>.json`` beside them
    says what was done."""
    source = irish_dir / "Download" / spec.csv
    if not source.is_file():
        raise realpath.RealPathError(
            f"{source}: Irish 5G CSV not found (fetch it with `cellcc traces download "
            "ireland-5g-2020`, or point --irish-dir at the dataset)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    down, up = dest / f"{name}.down", dest / f"{name}.up"
    # The whole-trace conversion goes to a directory of its own: validations sharing an
    # --out (one per scheme group, say) convert at the same time.
    with tempfile.TemporaryDirectory(dir=dest, prefix=f".{name}.") as scratch:
        full = traces.convert(source, Path(scratch) / f"{name}.full.down", kind="irish-csv")
        stamps = traces.read_timestamps(full.output)
    rates = traces.read_irish_csv(source).rates_bps
    busy = (rates >= IRISH_LEAD_IN_MBPS * 1e6).nonzero()[0]
    if not len(busy):
        raise realpath.RealPathError(
            f"{source}: no second of at least {IRISH_LEAD_IN_MBPS:g} Mbit/s to start from"
        )
    lead_ms = int(busy[0]) * 1000
    # Line m carries millisecond m - 1: the lines of the lead-in are those up to lead_ms.
    traces.write_trace(down, stamps[stamps > lead_ms] - lead_ms)
    period_s = (int(stamps[-1]) - lead_ms) / 1000.0
    constant = write_text_atomic(dest / f"{name}.up.rates", f"0 {spec.uplink_mbps:g}\n")
    uplink = traces.convert(constant, up, kind="rates", duration_s=period_s)
    write_json_atomic(
        dest / f"{name}.json",
        {
            "source": str(source),
            "column": "DL_bitrate",
            "lead_in_cut_s": lead_ms / 1000,
            "lead_in_rule": f"whole seconds before the first of >= {IRISH_LEAD_IN_MBPS:g} Mbit/s",
            "downlink_period_s": period_s,
            "uplink_mbps": spec.uplink_mbps,
            "conversion_notes": full.notes + uplink.notes,
        },
    )
    return TracePair(name, down, up)


def resolve_traces(
    names: Sequence[str], *, traces_dir: Path, irish_dir: Path | None, out_dir: Path
) -> list[TracePair]:
    """Each name as its file pair: an :data:`IRISH_TRACES` name is converted into
    ``<out_dir>/traces`` (never next to the source data), any other is
    ``<traces_dir>/<name>.{down,up}``."""
    pairs = []
    for name in names:
        if name in IRISH_TRACES:
            source = irish_dir if irish_dir is not None else traces_dir.parent / "ireland-5g-2020"
            pairs.append(convert_irish(name, IRISH_TRACES[name], source, out_dir / "traces"))
        else:
            pairs.append(TracePair(name, *validation.trace_pair(traces_dir, name)))
    return pairs


# -- one pair's files ---------------------------------------------------------------------


def pair_dir(out: Path, buffer: str, scheme: str, trace: str) -> Path:
    return out / "runs" / buffer / f"{scheme}--{trace}"


def run_file(out: Path, buffer: str, scheme: str, trace: str, run: int) -> Path:
    return pair_dir(out, buffer, scheme, trace) / f"run-{run}.json"


RUN_KEYS = (
    "scheme",
    "trace",
    "buffer",
    "run",
    "setup",
    "start_ms",
    "sim_throughput_mbps",
    "real_throughput_mbps",
    "sim_qdelay_mean_ms",
    "real_qdelay_mean_ms",
)
"""What every finished run file holds; one without them is redone."""

SPREAD_KEYS = (
    "sim_throughput_min_mbps",
    "sim_throughput_max_mbps",
    "sim_qdelay_mean_min_ms",
    "sim_qdelay_mean_max_ms",
)


def _setup_record(setup: validation.Setup) -> dict[str, Any]:
    """What a result depends on besides the pair, compared when resuming."""
    return {k: v for k, v in asdict(setup).items()}


def load_finished(
    path: Path, keys: Sequence[str], setup: validation.Setup
) -> dict[str, Any] | None:
    """The record at ``path`` if it is a finished one, else ``None`` (absent, cut short,
    not JSON). A finished record made with another setup is an error: mixing them would
    report a table no command made."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or any(k not in record for k in (*keys, "setup")):
        return None
    if isinstance(record["setup"], dict):
        # Records from before the offload setting were made with the emulator's default,
        # its offloads on.
        record["setup"] = {"offload": True, **record["setup"]}
    if record["setup"] != json_ready(_setup_record(setup)):
        raise realpath.RealPathError(
            f"{path} was made with {record['setup']}, not with this run's "
            f"{json_ready(_setup_record(setup))}; use another --out, or --force to redo it"
        )
    return dict(record)


# -- aggregation --------------------------------------------------------------------------


def _relative(real: float, sim: float) -> float:
    ok = sim and math.isfinite(sim) and math.isfinite(real)
    return (real - sim) / sim if ok else math.nan


def aggregate(
    scheme: str,
    trace: str,
    buffer: str,
    runs: Sequence[Mapping[str, Any]],
    spread: Mapping[str, float],
) -> dict[str, Any]:
    """One pair's row from its kernel runs and the simulator's start-time spread.

    ``real_*`` is the median over the kernel runs, with ``real_*_min``/``_max`` their
    range; ``sim_*`` is the median over the runs of the simulation aligned on each run
    (each kernel run starts at its own trace time, so each has its own aligned
    simulation); ``sim_*_min``/``_max`` is the spread over start times. The differences
    are of the two medians, against :func:`validation.bounds_for` the scheme."""
    if not runs:
        raise ValueError(f"{scheme} on {trace} ({buffer}): no kernel run to aggregate")
    frame = pd.DataFrame(list(runs))
    row: dict[str, Any] = {"scheme": scheme, "trace": trace, "buffer": buffer, "runs": len(frame)}
    for metric, unit in (("throughput", "mbps"), ("qdelay_mean", "ms"), ("qdelay_p95", "ms")):
        for side in ("real", "sim"):
            values = frame[f"{side}_{metric}_{unit}"].astype(float)
            row[f"{side}_{metric}_{unit}"] = float(values.median())
            if side == "real":
                row[f"real_{metric}_min_{unit}"] = float(values.min())
                row[f"real_{metric}_max_{unit}"] = float(values.max())
    row.update({k: float(spread[k]) for k in SPREAD_KEYS})
    tput_bound, qdelay_bound = validation.bounds_for(scheme)
    row["throughput_bound"], row["qdelay_bound"] = tput_bound, qdelay_bound
    for metric, unit, bound in (
        ("throughput", "mbps", tput_bound),
        ("qdelay_mean", "ms", qdelay_bound),
    ):
        sim = row[f"sim_{metric}_{unit}"]
        diff = _relative(row[f"real_{metric}_{unit}"], sim)
        row[f"{metric}_diff"] = diff
        row[f"{metric}_diff_min"] = _relative(row[f"real_{metric}_min_{unit}"], sim)
        row[f"{metric}_diff_max"] = _relative(row[f"real_{metric}_max_{unit}"], sim)
        row[f"sim_{metric}_spread_min"] = _relative(row[f"sim_{metric}_min_{unit}"], sim)
        row[f"sim_{metric}_spread_max"] = _relative(row[f"sim_{metric}_max_{unit}"], sim)
        row[f"{'qdelay' if metric == 'qdelay_mean' else metric}_ok"] = bool(abs(diff) <= bound)
    row["real_in_sim_spread"] = bool(
        row["sim_throughput_min_mbps"]
        <= row["real_throughput_mbps"]
        <= row["sim_throughput_max_mbps"]
    )
    # The run whose throughput is nearest the median (the lower one of a tie): its time
    # series stands for the pair in the plots.
    distance = (frame["real_throughput_mbps"] - row["real_throughput_mbps"]).abs()
    row["median_run"] = int(frame.loc[distance.idxmin(), "run"])
    if "emu_within_1ms" in frame:
        row["emu_within_1ms_min"] = float(frame["emu_within_1ms"].min())
    for column in DIAGNOSTIC_KEYS:
        if column in frame:
            row[column] = float(frame[column].astype(float).median())
    return row


DIAGNOSTIC_KEYS = (
    "qdelay_diff_first_5s",
    "qdelay_diff_after_5s",
    "real_rtos",
    "sim_rtos",
    "real_stall_s",
    "sim_stall_s",
    "real_unacked_max",
    "real_inflight_max",
    "sim_inflight_max",
    "real_rwnd_limited_s",
    "sim_rwnd_limited_s",
    "real_sndbuf_limited_s",
    "sim_sndbuf_limited_s",
)
"""Per-run diagnostics (:func:`cellcc.validation.diagnostics`), medians per pair."""


# -- the command --------------------------------------------------------------------------


def validate(
    schemes: Sequence[str],
    trace_names: Sequence[str],
    *,
    traces_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    setup: validation.Setup | None = None,
    buffers: Sequence[Buffer] | None = None,
    runs: int = 1,
    irish_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
    remeasure: bool = False,
    progress: Callable[[str], object] | None = None,
    docs: str | os.PathLike[str] | None = None,
    command: str | None = None,
) -> pd.DataFrame:
    """Run every kernel run and spread not already in ``out_dir`` and return the table
    (one row per buffer, scheme and trace). ``buffers`` defaults to ``setup``'s queue;
    ``docs`` names a markdown file whose generated section is replaced
    (:func:`cellcc.validation_report.update_docs`). ``remeasure`` recomputes every
    finished run's record from its logs (:func:`cellcc.validation.measure_run`) and every
    simulator spread with the simulator at hand, keeping the kernel runs."""
    from cellcc import validation_report

    unknown = [s for s in schemes if s not in validation.SCHEMES]
    if unknown:
        raise realpath.RealPathError(
            f"unknown validation scheme {unknown[0]!r}; choose from {', '.join(validation.SCHEMES)}"
        )
    if runs < 1:
        raise UsageError(f"--runs: at least 1 kernel run per pair, got {runs}")
    if not schemes or not trace_names:
        raise UsageError("validation needs at least one scheme and one trace")
    if docs is not None:
        validation_report.check_docs(docs)
    chosen = [validation.SCHEMES[s] for s in schemes]
    setup = setup if setup is not None else validation.Setup()
    buffers = list(buffers) if buffers else [Buffer.from_setup(setup)]
    out, tdir = Path(out_dir), Path(traces_dir)
    pairs = resolve_traces(
        trace_names,
        traces_dir=tdir,
        irish_dir=Path(irish_dir) if irish_dir is not None else None,
        out_dir=out,
    )
    # Run k of every pair before run k + 1 of any: a pair's runs are spread over the
    # whole validation, not taken back to back, and an interrupted validation has whole
    # rounds to report.
    plan = [
        (buffer, scheme, pair, k)
        for k in range(1, runs + 1)
        for buffer in buffers
        for scheme in chosen
        for pair in pairs
    ]

    def finished(buffer: Buffer, scheme: str, trace: str, k: int) -> dict[str, Any] | None:
        path = run_file(out, buffer.label, scheme, trace, k)
        return None if force else load_finished(path, RUN_KEYS, buffer.setup(setup))

    done = {(b.label, s.name, p.name, k): finished(b, s.name, p.name, k) for b, s, p, k in plan}
    todo = [(b, s, p, k) for b, s, p, k in plan if done[(b.label, s.name, p.name, k)] is None]
    needs_bpf = any(s.bpf for _, s, _, _ in todo)
    if todo:
        reasons = realpath.missing_requirements(bpf=needs_bpf)
        if reasons:
            raise realpath.RealPathError("cannot validate here: " + "; ".join(reasons))
    settings = {s.bpf: dict(s.kernel_params) for _, s, _, _ in todo if s.bpf}
    with realpath.kernel_loaded(settings) if needs_bpf else contextlib.nullcontext():
        for buffer, scheme, pair, k in plan:
            key = (buffer.label, scheme.name, pair.name, k)
            if done[key] is None:
                done[key] = _kernel_run(out, buffer, scheme, pair, k, setup)
            elif remeasure:
                done[key] = _kernel_run(out, buffer, scheme, pair, k, setup, remeasure=True)
            if progress:
                progress(f"{scheme.name} on {pair.name}, {buffer.label}, run {k}")

    rows = []
    for buffer in buffers:
        for scheme in chosen:
            for pair in pairs:
                spread = _spread(out, buffer, scheme, pair, setup, force=force or remeasure)
                if progress:
                    progress(f"{scheme.name} on {pair.name}, {buffer.label}: simulator spread")
                records = [
                    done[(buffer.label, scheme.name, pair.name, k)] for k in range(1, runs + 1)
                ]
                rows.append(
                    aggregate(
                        scheme.name, pair.name, buffer.label, [r for r in records if r], spread
                    )
                )
    table = pd.DataFrame(rows)
    run_table = pd.DataFrame([r for r in done.values() if r]).drop(columns="setup")
    write_csv_atomic(out / "validation.csv", table)
    write_json_atomic(out / "validation.json", json_ready(table.to_dict(orient="records")))
    write_csv_atomic(out / "runs.csv", run_table)
    validation_report.write_all(table, out, setup, runs=runs, command=command, docs=docs)
    return table


def _kernel_run(
    out: Path,
    buffer: Buffer,
    scheme: validation.RealScheme,
    pair: TracePair,
    k: int,
    setup: validation.Setup,
    *,
    remeasure: bool = False,
) -> dict[str, Any]:
    """Kernel run ``k`` of a pair, written to its run file before returning; with
    ``remeasure``, the finished run's record computed again from its logs."""
    pair_setup = buffer.setup(setup)
    run_dir = pair_dir(out, buffer.label, scheme.name, pair.name) / f"run-{k}"
    if remeasure:
        if not (run_dir / "downlink.log").is_file():
            raise realpath.RealPathError(
                f"{run_dir}: the run's logs are missing; --remeasure needs them (redo the "
                "run: delete its run file)"
            )
        record = validation.measure_run(scheme, pair.name, pair.down, pair.up, pair_setup, run_dir)
    else:
        # What an interrupted run (or the finished one --force redoes) left behind: the
        # flow and the emulator refuse to write over an existing log.
        shutil.rmtree(run_dir, ignore_errors=True)
        record = validation.kernel_run(scheme, pair.name, pair.down, pair.up, pair_setup, run_dir)
    record.update(buffer=buffer.label, run=k, setup=_setup_record(pair_setup))
    write_json_atomic(run_file(out, buffer.label, scheme.name, pair.name, k), record)
    return json.loads(json.dumps(json_ready(record)))


def _spread(
    out: Path,
    buffer: Buffer,
    scheme: validation.RealScheme,
    pair: TracePair,
    setup: validation.Setup,
    *,
    force: bool,
) -> dict[str, Any]:
    """The simulator's start-time spread of a pair, computed once and kept."""
    pair_setup = buffer.setup(setup)
    path = pair_dir(out, buffer.label, scheme.name, pair.name) / "sim-spread.json"
    if not force and (kept := load_finished(path, SPREAD_KEYS, pair_setup)) is not None:
        return kept
    spread: dict[str, Any] = dict(
        validation.simulated_spread(scheme, pair.down, pair.up, pair_setup)
    )
    spread["setup"] = _setup_record(pair_setup)
    write_json_atomic(path, spread)
    return spread
