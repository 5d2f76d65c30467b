import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cellcc import results


def test_atomic_text_write_replaces_and_leaves_no_temporaries(tmp_path):
    path = tmp_path / "sub" / "a.txt"
    results.write_text_atomic(path, "one")
    results.write_text_atomic(path, "two")
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["a.txt"]


def test_atomic_writes_get_the_mode_a_plain_open_would(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = results.write_bytes_atomic(tmp_path / "plot.png", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "a.csv"
    results.write_text_atomic(path, "old")

    class Broken:
        def to_csv(self, handle, index):
            handle.write("partial")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        results.write_csv_atomic(path, Broken())
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.csv"]


def test_a_device_or_fifo_is_written_in_place_and_never_replaced(tmp_path):
    import os
    import socket
    import stat
    import threading

    # A symlink to /dev/null, as /dev/stdout is a symlink: moving a file onto it would
    # replace the link (or, named directly as root, the device node itself).
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    results.write_json_atomic(link, {"a": 1})
    assert link.is_symlink()
    assert stat.S_ISCHR(Path("/dev/null").stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]
    # A FIFO: the reader gets the text, and the FIFO stays a FIFO.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    results.write_text_atomic(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    # A socket is refused, naming it.
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        with pytest.raises(OSError, match="block device or a socket") as info:
            results.write_text_atomic(sock_path, "x")
        assert info.value.filename == str(sock_path)
        assert stat.S_ISSOCK(sock_path.stat().st_mode)


def test_json_is_strict_nan_becomes_null(tmp_path):
    path = results.write_json_atomic(
        tmp_path / "x.json",
        {"a": float("nan"), "b": np.float64(1.5), "c": np.int64(2), "d": [math.inf], "p": tmp_path},
    )
    data = json.loads(path.read_text())
    assert data == {"a": None, "b": 1.5, "c": 2, "d": [None], "p": str(tmp_path)}


def test_parquet_carries_provenance(tmp_path):
    frame = pd.DataFrame({"flow": [0, -1], "throughput_mbps": [1.0, float("nan")]})
    record = results.provenance(seed=3, scenario_text="duration_s = 1.0\n", command="cellcc x")
    path = results.write_parquet_atomic(tmp_path / "s.parquet", frame, provenance=record)
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[results.PARQUET_PROVENANCE_KEY])
    assert meta["seed"] == 3 and meta["command"] == "cellcc x"
    pd.testing.assert_frame_equal(table.to_pandas(), frame)


def test_provenance_fields():
    record = results.provenance(seed=9, scenario_text="x = 1\n", command="cellcc run x.toml")
    for key in ("cellcc_version", "git_revision", "seed", "command", "python", "versions"):
        assert key in record
    assert set(record["versions"]) == {"numpy", "pandas", "pyarrow", "matplotlib"}
    assert record["versions"]["numpy"] == np.__version__
    assert record["scenario"] == "x = 1\n"
    revision = record["git_revision"]
    assert revision == "unknown" or re.fullmatch(r"[0-9a-f]{40}(-dirty)?", revision)


def test_distribution_versions_are_those_importlib_metadata_finds():
    from importlib import metadata

    from cellcc.results import _dist_info_version, _distribution_version

    names = {dist.metadata["Name"] for dist in metadata.distributions()}
    for name in sorted(names):
        # Found without importlib.metadata, or left to it (an egg, a zip).
        assert _dist_info_version(name) in (None, metadata.version(name)), name
        assert _distribution_version(name.upper().replace("-", "_")) == metadata.version(name)
    for name in ("numpy", "pandas", "pyarrow"):
        assert _dist_info_version(name) == metadata.version(name)
    assert _distribution_version("no-such-distribution") is None


def test_versions_are_read_without_importing_importlib_metadata():
    if results._dist_info_version("cellcc") is None:
        pytest.skip("cellcc is not installed as a distribution here")
    code = (
        "import sys, cellcc; from cellcc.results import provenance; provenance(seed=1); "
        "print('importlib.metadata' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
