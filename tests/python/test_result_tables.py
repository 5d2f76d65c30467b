"""Result tables written without pandas (cellcc._columns) are written as pandas writes
their DataFrames: the same CSV bytes and JSON values, and Parquet (encoded by the core)
that reads back as the same Arrow values and the same DataFrame."""

import io
import json
import math
import pickle

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cellcc import api
from cellcc._columns import LEADING_COLUMNS, Table, column_kind
from cellcc.results import PARQUET_PROVENANCE_KEY, json_ready, write_parquet_atomic
from helpers import assert_same_arrow_values

#: Columns of every kind, with the values that are easy to get wrong.
COLUMNS = {
    "flow": [0, 1, -1, -3],
    "scheme": ["cubic", 'a "quoted", name', "ünïcode\nline", None],
    "t_s": [0.1, 1e-05, 1e16, -0.0],
    "cwnd": [10, None, 12, 2**53 + 1],
    "rate": [1.5, float("nan"), float("inf"), 2.0],
    "completion_s": [None, None, None, None],
    "done": [True, False, True, True],
    "big": [2**62, -(2**63), 0, 5],
    "tiny": [5e-324, 1.7976931348623157e308, 123456789.123456789, 0.30000000000000004],
}

#: Columns pandas gives a dtype this module does not write itself (written through
#: pandas, with the same result).
UNUSUAL = {
    "maybe": [True, None, False, True],
    "mixed": [1, "a", 2.5, None],
    "huge": [2**64 - 1, 0, 1, 2],
}


def assert_same_text(table, frame):
    csv = io.StringIO()
    table.to_csv(csv)
    assert csv.getvalue() == frame.to_csv(index=False)
    records = json.dumps(json_ready(table.records()))
    assert records == json.dumps(json_ready(frame.to_dict(orient="records")))


def assert_same_parquet(encoded, frame):
    """``encoded`` holds the values pyarrow writes for ``frame`` and reads back as it."""
    expected = pa.Table.from_pandas(frame, preserve_index=False)
    assert_same_arrow_values(pq.read_table(io.BytesIO(encoded)), expected)
    # Read back as the file pyarrow writes is (a missing string is None either way,
    # where pandas 2 may hold NaN in the frame written).
    by_pyarrow = io.BytesIO()
    pq.write_table(expected, by_pyarrow)
    pd.testing.assert_frame_equal(
        pd.read_parquet(io.BytesIO(encoded)), pd.read_parquet(io.BytesIO(by_pyarrow.getvalue()))
    )


def assert_same(table, frame):
    assert_same_text(table, frame)
    encoded = table.encode_parquet({})
    assert (encoded is not None) == table.lean
    if encoded is not None:
        assert_same_parquet(encoded, frame)


@pytest.mark.parametrize("name", list(COLUMNS))
def test_each_kind_of_column_is_written_as_pandas_writes_it(native, name):
    table = Table.from_columns({name: COLUMNS[name]})
    assert table.lean
    assert_same(table, pd.DataFrame({name: COLUMNS[name]}))


@pytest.mark.parametrize("name", list(UNUSUAL))
def test_other_columns_go_through_pandas(name, tmp_path):
    table = Table.from_columns({"flow": [0, 1, 2, 3], name: UNUSUAL[name]})
    frame = pd.DataFrame({"flow": [0, 1, 2, 3], name: UNUSUAL[name]})
    assert not table.lean
    if name == "mixed":  # which Parquet cannot hold, either way
        with pytest.raises(pa.ArrowInvalid):
            write_parquet_atomic(tmp_path / "mixed.parquet", table)
        assert_same_text(table, frame)
        return
    assert_same(table, frame)
    written = write_parquet_atomic(tmp_path / "t.parquet", table)
    pd.testing.assert_frame_equal(pd.read_parquet(written), frame)


def test_kinds_are_the_dtypes_pandas_infers():
    for values in [*COLUMNS.values(), *UNUSUAL.values()]:
        dtype = str(pd.DataFrame({"x": values})["x"].dtype)
        if dtype == "object":  # strings in pandas 2, else missing values or a mix
            strings = all(v is None or isinstance(v, str) for v in values)
            expected = "null" if all(v is None for v in values) else "str" if strings else None
        else:
            expected = None if dtype == "uint64" else dtype
        assert column_kind(values) == expected, values


def test_rows_with_missing_keys_and_leading_columns(native):
    rows = [
        {"rtt_ms": 1.5, "scheme": "cubic", "flow": 0},
        {"rtt_ms": 2.5, "flow": -1, "extra": "x"},
        {"scheme": "bbr", "flow": 1, "rtt_ms": 3},
    ]
    table = Table.from_records(rows, leading=True)
    assert list(table.columns) == ["flow", "scheme", "rtt_ms", "extra"]
    frame = table.frame()
    assert list(frame.columns) == ["flow", "scheme", "rtt_ms", "extra"]
    assert_same(table, frame)


def test_a_table_without_rows_goes_through_pandas():
    table = Table.from_columns({"flow": [], "t_s": []})
    assert table.empty and not table.lean
    assert_same(table, pd.DataFrame({"flow": [], "t_s": []}))


def test_all_columns_together_with_the_leading_ones_first(native):
    columns = {name: COLUMNS[name] for name in reversed(COLUMNS)}
    table = Table.from_columns(columns, leading=True)
    frame = pd.DataFrame(columns)
    frame = frame[["flow", "scheme", "t_s", *[c for c in columns if c not in LEADING_COLUMNS]]]
    assert list(table.columns) == list(frame.columns)
    assert_same(table, frame)


def test_parquet_written_by_the_core_carries_the_provenance(native, tmp_path):
    table = Table.from_columns({"flow": [0, -1], "throughput_mbps": [1.0, None]})
    path = write_parquet_atomic(tmp_path / "s.parquet", table, provenance={"seed": 3})
    assert json.loads(pq.read_schema(path).metadata[PARQUET_PROVENANCE_KEY]) == {"seed": 3}
    assert list(tmp_path.iterdir()) == [path]  # no temporary left


def test_the_core_refuses_a_value_of_another_kind_naming_the_column(native):
    from cellcc import _native

    with pytest.raises(ValueError, match='column "rtt"'):
        _native.encode_parquet([("rtt", "float64", [1.0, "x"])], {})
    with pytest.raises(ValueError, match="rows"):
        _native.encode_parquet([("a", "int64", [1]), ("b", "int64", [1, 2])], {})


def raw_result():
    return {
        "summary": [
            {"flow": 0, "scheme": "cubic", "throughput_mbps": 5.0, "completion_s": None},
            {"flow": -1, "scheme": "cubic", "throughput_mbps": 5.0, "completion_s": None},
        ],
        "timeseries": {"t_s": [0.5, 1.0], "flow": [0, 0], "cwnd": [10, None]},
        "link": {"capacity_mbps": 12.0},
        "meta": {"seed": 3, "name": "t"},
        "packet_log": None,
        "acks": {"flow": [0, 0], "t_s": [0.1, 0.2], "rtt_ms": [20.0, None]},
        "short_flows": {"background": [], "start_s": []},
        "cc_info": [{"flow": 0, "phase": "concave"}],
    }


def test_result_tables_read_as_the_dataframes_they_were():
    result = api._result(raw_result(), "", "<dict>")
    assert list(result.summary.columns) == ["flow", "scheme", "throughput_mbps", "completion_s"]
    assert list(result.timeseries.columns) == ["flow", "t_s", "cwnd"]
    assert result.timeseries["cwnd"].dtype == "float64"
    assert math.isnan(result.timeseries["cwnd"][1])
    assert result.acks is not None and len(result.acks) == 2
    assert result.short_flows is None  # no rows
    assert result.cc_info.to_dict(orient="records") == [{"flow": 0, "phase": "concave"}]
    assert result.flows["flow"].tolist() == [0]
    assert result.seed == 3


def test_save_writes_changes_made_to_a_table(tmp_path):
    result = api._result(raw_result(), "", "<dict>")
    result.summary["note"] = "changed"
    result.timeseries = result.timeseries.iloc[:1]
    result.save(tmp_path, command="test")
    assert pd.read_csv(tmp_path / "summary.csv")["note"].tolist() == ["changed"] * 2
    assert len(pd.read_parquet(tmp_path / "timeseries.parquet")) == 1
    assert json.loads((tmp_path / "summary.json").read_text())["summary"][0]["note"] == "changed"


def test_a_result_pickles_with_its_tables():
    result = api._result(raw_result(), "", "<dict>")
    copy = pickle.loads(pickle.dumps(result))
    pd.testing.assert_frame_equal(copy.summary, result.summary)
    pd.testing.assert_frame_equal(copy.acks, result.acks)
    assert copy.meta == result.meta
