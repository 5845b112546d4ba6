//! MySQL/MariaDB binlog row images straight into the JSON bytes of Debezium's row struct, as
//! `orjson.dumps(TableState.row(values))` writes them from `rows.read_image`'s values
//! (cdc/sources/mysql/rows.py is the reference; cdc/sources/mysql/native_rows.py chooses the kinds).
//!
//! A row image is a null bitmap over the columns, then each non-null value in its storage format.
//! Every column has a layout (`fixed` n bytes, or `prefixed` by an n-byte little-endian length)
//! so that columns left out of the event are skipped; the output columns have a kind:
//!
//!   int:s|u / int24:s|u   integers (little-endian, the schema's signedness)   bool   TINYINT(1)
//!   text                  UTF-8 text (utf8mb3 / utf8mb4)                      date   epoch days
//!   decimal:P:S           DECIMAL(P,S) as Connect's Decimal (precise mode, P <= 38)
//!   datetime2:F:us|ms     DATETIME(F) as epoch micro/milliseconds
//!   timestamp2:F:D        TIMESTAMP(F) as ZonedTimestamp with D fraction digits (<= 0: trimmed)
//!
//! A value its kind does not take (a zero date) is the column's `missing` JSON, as in Python; an
//! image this codec cannot read (columns left out, text that is not UTF-8, a decimal past 127
//! bits, a length that does not match) raises `Fallback` and the event goes the Python way.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::{days_from_civil, days_in_month, fallback, write_i64, write_string, write_unscaled_value,
            write_zoned_micros, DAY_US};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Layout {
    Fixed(usize),
    Prefixed(usize),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Int { size: usize, unsigned: bool },
    Bool,
    Text,
    Decimal { precision: usize, scale: usize },
    Date,
    Datetime2 { fsp: usize, millis: bool },
    Timestamp2 { fsp: usize, digits: usize },
}

struct Column {
    layout: Layout,
    output: Option<(Kind, Vec<u8>, Vec<u8>)>, // kind, `{"name":` / `,"name":`, missing value's JSON
}

struct KeyColumn {
    column: usize,
    name: Py<PyString>,
}

#[pyclass(frozen)]
pub struct BinlogRowCodec {
    columns: Vec<Column>,
    keys: Vec<KeyColumn>,
}

fn fraction_size(fsp: usize) -> usize {
    (fsp + 1) / 2
}

fn parse_kind(text: &str, layout: Layout) -> PyResult<Kind> {
    let bad = || PyValueError::new_err(format!("bad binlog column kind {text:?} for {layout:?}"));
    let parts: Vec<&str> = text.split(':').collect();
    let number = |i: usize| parts.get(i).and_then(|p| p.parse::<usize>().ok()).ok_or_else(bad);
    let kind = match parts[0] {
        "int" | "int24" => match layout {
            Layout::Fixed(size) if [1, 2, 3, 4, 8].contains(&size) => {
                Kind::Int { size, unsigned: parts.get(1) == Some(&"u") }
            }
            _ => return Err(bad()),
        },
        "bool" => Kind::Bool,
        "text" => Kind::Text,
        "decimal" => Kind::Decimal { precision: number(1)?, scale: number(2)? },
        "date" => Kind::Date,
        "datetime2" => Kind::Datetime2 { fsp: number(1)?, millis: parts.get(2) == Some(&"ms") },
        "timestamp2" => Kind::Timestamp2 { fsp: number(1)?, digits: number(2)? },
        _ => return Err(bad()),
    };
    let fits = match (kind, layout) {
        (Kind::Bool, Layout::Fixed(1)) | (Kind::Text, Layout::Prefixed(_)) | (Kind::Date, Layout::Fixed(3)) => true,
        (Kind::Int { .. }, Layout::Fixed(_)) => true,
        (Kind::Decimal { precision, scale }, Layout::Fixed(n)) => {
            precision <= 38 && scale <= precision && n == decimal_size(precision, scale)
        }
        (Kind::Datetime2 { fsp, .. }, Layout::Fixed(n)) => fsp <= 6 && n == 5 + fraction_size(fsp),
        (Kind::Timestamp2 { fsp, .. }, Layout::Fixed(n)) => fsp <= 6 && n == 4 + fraction_size(fsp),
        _ => false,
    };
    if fits { Ok(kind) } else { Err(bad()) }
}

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

fn decimal_size(precision: usize, scale: usize) -> usize {
    let integral = precision - scale;
    integral / 9 * 4 + DIG2BYTES[integral % 9] + scale / 9 * 4 + DIG2BYTES[scale % 9]
}

fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

fn le(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

/// MySQL's decimal2bin read back as the unscaled integer (`rows._new_decimal`); None past i128.
fn decimal_unscaled(raw: &[u8], precision: usize, scale: usize) -> Option<i128> {
    let mut bytes = raw.to_vec();
    let negative = bytes[0] & 0x80 == 0;
    bytes[0] ^= 0x80;
    if negative {
        bytes.iter_mut().for_each(|b| *b ^= 0xFF);
    }
    let integral = precision - scale;
    let (head, full_int, full_frac, tail_digits) = (DIG2BYTES[integral % 9], integral / 9, scale / 9, scale % 9);
    let mut at = 0;
    let mut whole: i128 = be(&bytes[..head]) as i128;
    at += head;
    for _ in 0..full_int {
        whole = whole.checked_mul(1_000_000_000)?.checked_add(be(&bytes[at..at + 4]) as i128)?;
        at += 4;
    }
    let mut frac: i128 = 0;
    for _ in 0..full_frac {
        frac = frac.checked_mul(1_000_000_000)?.checked_add(be(&bytes[at..at + 4]) as i128)?;
        at += 4;
    }
    let tail = DIG2BYTES[tail_digits];
    if tail > 0 {
        frac = frac.checked_mul(10i128.pow(tail_digits as u32))?.checked_add(be(&bytes[at..at + tail]) as i128)?;
    }
    let unscaled = whole.checked_mul(10i128.checked_pow(scale as u32)?)?.checked_add(frac)?;
    Some(if negative { -unscaled } else { unscaled })
}

/// A civil date-time as epoch microseconds; None where Python's datetime() refuses it.
fn civil_micros(year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64, micros: i64)
                -> Option<i64> {
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month)
        || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(days_from_civil(year, month, day) * DAY_US + ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros)
}

fn fraction_micros(bytes: &[u8]) -> i64 {
    let scale = [1, 10_000, 100, 1][bytes.len()];
    be(bytes) as i64 * scale
}

/// A little-endian integer of `size` bytes; an unsigned BIGINT is not taken (native_rows.py
/// leaves it to Python: Debezium's modes for it differ).
fn int_value(value: &[u8], size: usize, unsigned: bool) -> PyResult<i64> {
    let raw = le(value);
    if unsigned && size == 8 {
        return Err(fallback("an unsigned BIGINT"));
    }
    if unsigned || size == 8 {
        return Ok(raw as i64);
    }
    let shift = 64 - 8 * size as u32;
    Ok(((raw << shift) as i64) >> shift)
}

/// One value in its kind; Ok(false) when it is Python's None (a zero date: the column's missing value).
fn write_value(out: &mut Vec<u8>, kind: Kind, value: &[u8]) -> PyResult<bool> {
    match kind {
        Kind::Int { size, unsigned } => write_i64(out, int_value(value, size, unsigned)?),
        Kind::Bool => out.extend_from_slice(if value[0] != 0 { b"true" } else { b"false" }),
        Kind::Text => {
            if std::str::from_utf8(value).is_err() {
                return Err(fallback("text that is not UTF-8"));
            }
            write_string(out, value);
        }
        Kind::Decimal { precision, scale } => {
            let unscaled = decimal_unscaled(value, precision, scale).ok_or_else(|| fallback("a decimal past i128"))?;
            write_unscaled_value(out, unscaled);
        }
        Kind::Date => {
            let packed = le(value) as i64;
            let (day, month, year) = (packed & 31, packed >> 5 & 15, packed >> 9);
            match civil_micros(year, month, day, 0, 0, 0, 0) {
                Some(micros) => write_i64(out, micros / DAY_US),
                None => return Ok(false),
            }
        }
        Kind::Datetime2 { fsp, millis } => {
            let packed = be(&value[..5]) as i64 - 0x80_0000_0000;
            let micros = fraction_micros(&value[5..5 + fraction_size(fsp)]);
            let (ymd, hms) = (packed >> 17, packed % (1 << 17));
            let year_month = ymd >> 5;
            match civil_micros(year_month / 13, year_month % 13, ymd & 31, hms >> 12, hms >> 6 & 63, hms & 63, micros) {
                Some(total) => write_i64(out, if millis { total.div_euclid(1000) } else { total }),
                None => return Ok(false),
            }
        }
        Kind::Timestamp2 { fsp, digits } => {
            let seconds = be(&value[..4]) as i64; // 1970..2106
            let micros = fraction_micros(&value[4..4 + fraction_size(fsp)]);
            write_zoned_micros(out, seconds * 1_000_000 + micros, digits.min(6));
        }
    }
    Ok(true)
}

impl BinlogRowCodec {
    /// One image at `at`: its JSON and key, and where the next image starts.
    fn image<'py>(&self, py: Python<'py>, data: &[u8], mut at: usize)
                  -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyAny>, usize)> {
        let count = self.columns.len();
        let nulls = data.get(at..at + (count + 7) / 8).ok_or_else(|| fallback("a truncated image"))?;
        at += (count + 7) / 8;
        let mut out: Vec<u8> = Vec::with_capacity(128);
        let mut spans: Vec<Option<(usize, usize)>> = Vec::with_capacity(count);
        for (i, column) in self.columns.iter().enumerate() {
            let span = if nulls[i >> 3] >> (i & 7) & 1 == 1 {
                None
            } else {
                let (start, end) = match column.layout {
                    Layout::Fixed(n) => (at, at + n),
                    Layout::Prefixed(n) => {
                        let length = le(data.get(at..at + n).ok_or_else(|| fallback("a truncated image"))?) as usize;
                        (at + n, at + n + length)
                    }
                };
                if end > data.len() {
                    return Err(fallback("a truncated image"));
                }
                at = end;
                Some((start, end))
            };
            spans.push(span);
            if let Some((kind, prefix, missing)) = &column.output {
                out.extend_from_slice(prefix);
                let written = match span {
                    None => false,
                    Some((start, end)) => {
                        let mark = out.len();
                        let done = write_value(&mut out, *kind, &data[start..end])?;
                        if !done {
                            out.truncate(mark);
                        }
                        done
                    }
                };
                if !written {
                    out.extend_from_slice(missing);
                }
            }
        }
        if out.is_empty() {
            out.push(b'{');
        }
        out.push(b'}');
        let key = PyDict::new(py);
        for k in &self.keys {
            let column = &self.columns[k.column];
            let value: Bound<'py, PyAny> = match (spans[k.column], column.output.as_ref().map(|o| o.0)) {
                (None, _) => py.None().into_bound(py),
                (Some((start, end)), Some(Kind::Int { size, unsigned })) => {
                    int_value(&data[start..end], size, unsigned)?.into_pyobject(py)?.into_any()
                }
                (Some((start, end)), Some(Kind::Text)) => PyString::new(
                    py, std::str::from_utf8(&data[start..end]).map_err(|_| fallback("text that is not UTF-8"))?,
                ).into_any(),
                _ => return Err(fallback("a key column of another kind")),
            };
            key.set_item(k.name.bind(py), value)?;
        }
        Ok((PyBytes::new(py, &out), key.into_any(), at))
    }
}

#[pymethods]
impl BinlogRowCodec {
    /// `columns`: every column of the table, in order: `(layout, n, kind, name JSON, missing JSON)`
    /// with layout `fixed` (n bytes) or `prefixed` (an n-byte length, then the bytes), and kind None
    /// for a column left out of the row struct. `keys`: `(column index, name)` of the key columns
    /// (int or text kinds), in the key's order.
    #[new]
    fn new(columns: Vec<Bound<'_, PyTuple>>, keys: Vec<(usize, Bound<'_, PyString>)>) -> PyResult<Self> {
        let mut parsed = Vec::with_capacity(columns.len());
        let mut first = true;
        for spec in &columns {
            let layout = match (spec.get_item(0)?.extract::<String>()?.as_str(), spec.get_item(1)?.extract::<usize>()?) {
                ("fixed", n) => Layout::Fixed(n),
                ("prefixed", n) if (1..=4).contains(&n) => Layout::Prefixed(n),
                _ => return Err(PyValueError::new_err("layout: fixed or prefixed (1 to 4)")),
            };
            let kind = spec.get_item(2)?;
            let output = if kind.is_none() {
                None
            } else {
                let mut prefix = vec![if first { b'{' } else { b',' }];
                first = false;
                prefix.extend_from_slice(spec.get_item(3)?.downcast::<PyBytes>()?.as_bytes());
                prefix.push(b':');
                let missing = spec.get_item(4)?.downcast::<PyBytes>()?.as_bytes().to_vec();
                Some((parse_kind(&kind.extract::<String>()?, layout)?, prefix, missing))
            };
            parsed.push(Column { layout, output });
        }
        let mut key_columns = Vec::with_capacity(keys.len());
        for (column, name) in keys {
            match parsed.get(column).and_then(|c| c.output.as_ref()).map(|o| o.0) {
                Some(Kind::Int { .. }) | Some(Kind::Text) => {}
                _ => return Err(PyValueError::new_err("a key column must be an output column of kind int or text")),
            }
            key_columns.push(KeyColumn { column, name: name.unbind() });
        }
        Ok(BinlogRowCodec { columns: parsed, keys: key_columns })
    }

    /// Every row image of a rows event's data (before and after alternating for an UPDATE) as
    /// `[(row struct JSON, key dict), ...]`; `Fallback` when the event is for the Python path.
    #[pyo3(signature = (data, present, present_after=None))]
    fn encode_images<'py>(&self, py: Python<'py>, data: &[u8], present: &[u8], present_after: Option<&[u8]>)
                          -> PyResult<Bound<'py, PyList>> {
        let all = |bitmap: &[u8]| (0..self.columns.len()).all(|i| bitmap.get(i >> 3).is_some_and(|b| b >> (i & 7) & 1 == 1));
        if !all(present) || present_after.is_some_and(|p| !all(p)) {
            return Err(fallback("columns left out of the image"));
        }
        let images = PyList::empty(py);
        let mut at = 0;
        while at < data.len() {
            let (json, key, next) = self.image(py, data, at)?;
            images.append((json, key))?;
            at = next;
            if present_after.is_some() {
                let (json, key, next) = self.image(py, data, at)?;
                images.append((json, key))?;
                at = next;
            }
        }
        if at != data.len() {
            return Err(fallback("images past the event's end"));
        }
        Ok(images)
    }
}
