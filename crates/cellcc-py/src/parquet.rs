//! Parquet encoding of a result table, so that writing a run's results needs neither
//! pandas nor pyarrow (their imports cost more CPU time than simulating a short trace).
//!
//! The table comes as columns of plain Python values, each with the pandas dtype it has
//! (`python/cellcc/_columns.py`, `column_kind`): `int64`, `float64`, `bool`, `str` or
//! `null` (nothing but missing values). The file is the one pyarrow writes for that
//! DataFrame, read back by `pandas.read_parquet` as the same DataFrame: every column
//! optional (nullable, as `Table.from_pandas` makes it), a float's NaN or None stored as
//! null, strings as UTF-8 `BYTE_ARRAY` with the STRING logical type, an all-missing column
//! as INT32 with the UNKNOWN (null) logical type, Snappy compression, row groups of at
//! most [`ROW_GROUP_ROWS`] rows. Two differences from pyarrow's file: no `ARROW:schema`
//! entry (so pyarrow reads strings as `string` where a pandas 3 frame written by pyarrow
//! comes back as `large_string`), and no `pandas` entry (pandas' defaults give the same
//! dtypes). The encoding is done in memory and the bytes returned: the caller writes them
//! (atomically, naming the file in any error).

use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::Type;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// Rows per row group: pyarrow's default `row_group_size` (1 Mi rows).
const ROW_GROUP_ROWS: usize = 1 << 20;

/// Definition levels of an optional, non-nested column: 1 present, 0 null.
const PRESENT: i16 = 1;
const NULL: i16 = 0;

/// One column's values, converted from Python.
enum Values {
    Int64(Vec<i64>),
    /// None where the value is missing (None or NaN in Python).
    Float64(Vec<Option<f64>>),
    Bool(Vec<bool>),
    /// None where the value is missing.
    Str(Vec<Option<String>>),
    /// Only missing values: the length.
    Null(usize),
}

impl Values {
    /// Converts a column of `kind` (see the module docs); a value of another type is a
    /// `ValueError` naming the column.
    fn extract(name: &str, kind: &str, values: &Bound<'_, PyList>) -> PyResult<Self> {
        let wrong = |e: PyErr| PyValueError::new_err(format!("column {name:?} ({kind}): {e}"));
        Ok(match kind {
            "int64" => Values::Int64(values.extract().map_err(wrong)?),
            "float64" => {
                let floats: Vec<Option<f64>> = values.extract().map_err(wrong)?;
                Values::Float64(
                    floats
                        .into_iter()
                        .map(|v| v.filter(|x| !x.is_nan()))
                        .collect(),
                )
            }
            "bool" => Values::Bool(values.extract().map_err(wrong)?),
            "str" => Values::Str(values.extract().map_err(wrong)?),
            "null" => Values::Null(values.len()),
            other => {
                return Err(PyValueError::new_err(format!(
                    "column {name:?}: unknown kind {other:?} (int64, float64, bool, str, null)"
                )))
            }
        })
    }

    fn len(&self) -> usize {
        match self {
            Values::Int64(v) => v.len(),
            Values::Float64(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str(v) => v.len(),
            Values::Null(n) => *n,
        }
    }

    /// The Parquet field of this column.
    fn field(&self, name: &str) -> Result<Type, ParquetError> {
        let (physical, logical) = match self {
            Values::Int64(_) => (PhysicalType::INT64, None),
            Values::Float64(_) => (PhysicalType::DOUBLE, None),
            Values::Bool(_) => (PhysicalType::BOOLEAN, None),
            Values::Str(_) => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            Values::Null(_) => (PhysicalType::INT32, Some(LogicalType::Unknown)),
        };
        Type::primitive_type_builder(name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
    }

    /// Writes rows `rows` of this column into `column`.
    fn write(
        &self,
        column: &mut SerializedColumnWriter<'_>,
        rows: std::ops::Range<usize>,
    ) -> Result<(), ParquetError> {
        match self {
            Values::Int64(v) => {
                let levels = vec![PRESENT; rows.len()];
                column
                    .typed::<Int64Type>()
                    .write_batch(&v[rows], Some(&levels), None)?;
            }
            Values::Bool(v) => {
                let levels = vec![PRESENT; rows.len()];
                column
                    .typed::<BoolType>()
                    .write_batch(&v[rows], Some(&levels), None)?;
            }
            Values::Float64(v) => {
                let (present, levels) = split_missing(&v[rows], |x| *x);
                column
                    .typed::<DoubleType>()
                    .write_batch(&present, Some(&levels), None)?;
            }
            Values::Str(v) => {
                let (present, levels) =
                    split_missing(&v[rows], |s| s.as_deref().map(ByteArray::from));
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&present, Some(&levels), None)?;
            }
            Values::Null(_) => {
                let levels = vec![NULL; rows.len()];
                column
                    .typed::<Int32Type>()
                    .write_batch(&[], Some(&levels), None)?;
            }
        }
        Ok(())
    }
}

/// The present values of an optional column and the definition level of every row.
fn split_missing<T, U>(values: &[T], get: impl Fn(&T) -> Option<U>) -> (Vec<U>, Vec<i16>) {
    let mut present = Vec::with_capacity(values.len());
    let mut levels = Vec::with_capacity(values.len());
    for value in values {
        match get(value) {
            Some(v) => {
                present.push(v);
                levels.push(PRESENT);
            }
            None => levels.push(NULL),
        }
    }
    (present, levels)
}

/// Encodes `columns` (name, kind, list of values; all of one length) as a Parquet file
/// whose key-value metadata is `metadata`; returns the file's bytes.
fn encode(
    columns: &[(String, Values)],
    metadata: Vec<(String, String)>,
) -> Result<Vec<u8>, ParquetError> {
    let fields = columns
        .iter()
        .map(|(name, values)| values.field(name).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Type::group_type_builder("schema")
        .with_fields(fields)
        .build()?;
    let key_value = metadata
        .into_iter()
        .map(|(k, v)| KeyValue::new(k, v))
        .collect();
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_key_value_metadata(Some(key_value))
        .build();
    let rows = columns.first().map_or(0, |(_, values)| values.len());
    let mut writer = SerializedFileWriter::new(Vec::new(), Arc::new(schema), Arc::new(properties))?;
    let mut start = 0;
    while start < rows {
        let end = rows.min(start + ROW_GROUP_ROWS);
        let mut group = writer.next_row_group()?;
        for (_, values) in columns {
            let mut column = group.next_column()?.ok_or_else(|| {
                ParquetError::General("fewer columns in the schema than given".into())
            })?;
            values.write(&mut column, start..end)?;
            column.close()?;
        }
        group.close()?;
        start = end;
    }
    writer.into_inner()
}

/// A result table as the bytes of a Parquet file (see the module docs). `columns` are
/// `(name, kind, values)` with kind `int64`, `float64`, `bool`, `str` or `null`, all of
/// one length; `metadata` the file's key-value metadata. A value that does not fit its
/// kind, or columns of different lengths, raise `ValueError`.
#[pyfunction]
pub(crate) fn encode_parquet<'py>(
    py: Python<'py>,
    columns: Vec<(String, String, Bound<'py, PyList>)>,
    metadata: Vec<(String, String)>,
) -> PyResult<Bound<'py, PyBytes>> {
    let converted = columns
        .iter()
        .map(|(name, kind, values)| Ok((name.clone(), Values::extract(name, kind, values)?)))
        .collect::<PyResult<Vec<_>>>()?;
    if let Some((first, values)) = converted.first() {
        let rows = values.len();
        if let Some((name, other)) = converted.iter().find(|(_, v)| v.len() != rows) {
            return Err(PyValueError::new_err(format!(
                "column {name:?} has {} rows, column {first:?} {rows}",
                other.len()
            )));
        }
    }
    let bytes = py
        .detach(|| encode(&converted, metadata))
        .map_err(|e| PyValueError::new_err(format!("cannot encode the table as Parquet: {e}")))?;
    Ok(PyBytes::new(py, &bytes))
}
