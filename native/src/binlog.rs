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

/// Where a column's value lies in the event's data: `start..end`, or None for NULL.
type Span = Option<(usize, usize)>;

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
    fsp.div_ceil(2)
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
    fn image<'py>(&self, py: Python<'py>, data: &[u8], at: usize)
                  -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyAny>, usize)> {
        let mut out: Vec<u8> = Vec::with_capacity(128);
        let (spans, at) = self.image_json(data, at, &mut out)?;
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

    /// One image at `at`: the row struct's JSON into `out`, where each column's value lies in
    /// `data` (None: NULL), and where the next image starts.
    fn image_json(&self, data: &[u8], mut at: usize, out: &mut Vec<u8>) -> PyResult<(Vec<Span>, usize)> {
        let count = self.columns.len();
        let nulls = data.get(at..at + count.div_ceil(8)).ok_or_else(|| fallback("a truncated image"))?;
        at += count.div_ceil(8);
        let mut spans: Vec<Span> = Vec::with_capacity(count);
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
                        let done = write_value(out, *kind, &data[start..end])?;
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
        Ok((spans, at))
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
        if self.columns.is_empty() && !data.is_empty() {
            return Err(fallback("images of a table without columns")); // they take no bytes: no end below
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

/// The binlog codec's pure parts, without a Python interpreter: each kind against the JSON the
/// Python path writes from `rows.read_image`'s values (cdc/sources/mysql/rows.py and types.py, then
/// orjson), which for the values of Debezium's recorded output
/// (tests/fixtures/reference/debezium/mariadb-types.jsonl, marked "Debezium") are its values too;
/// the storage formats' helpers; an image's null bitmap and layouts.
#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }

    /// What `write_value` writes: Some(JSON), None for Python's None (the column's missing value),
    /// Err for an image for the Python path.
    fn json_of(kind: Kind, value: &[u8]) -> Result<Option<String>, ()> {
        let mut out = Vec::new();
        match write_value(&mut out, kind, value) {
            Ok(true) => Ok(Some(String::from_utf8(out).unwrap())),
            Ok(false) => Ok(None),
            Err(_) => Err(()),
        }
    }

    fn check(kind: Kind, cases: &[(&str, Option<&str>)]) {
        for &(bytes, expected) in cases {
            assert_eq!(json_of(kind, &hex(bytes)), Ok(expected.map(String::from)), "{kind:?} of {bytes}");
        }
    }

    #[test]
    fn kinds_and_the_layouts_they_fit() {
        let fits = [
            ("int:s", Layout::Fixed(4), Kind::Int { size: 4, unsigned: false }),
            ("int:u", Layout::Fixed(1), Kind::Int { size: 1, unsigned: true }),
            ("int24:u", Layout::Fixed(3), Kind::Int { size: 3, unsigned: true }),
            ("int:s", Layout::Fixed(8), Kind::Int { size: 8, unsigned: false }),
            ("bool", Layout::Fixed(1), Kind::Bool),
            ("text", Layout::Prefixed(2), Kind::Text),
            ("decimal:10:2", Layout::Fixed(5), Kind::Decimal { precision: 10, scale: 2 }),
            ("decimal:38:0", Layout::Fixed(17), Kind::Decimal { precision: 38, scale: 0 }),
            ("date", Layout::Fixed(3), Kind::Date),
            ("datetime2:6:us", Layout::Fixed(8), Kind::Datetime2 { fsp: 6, millis: false }),
            ("datetime2:0:ms", Layout::Fixed(5), Kind::Datetime2 { fsp: 0, millis: true }),
            ("timestamp2:3:3", Layout::Fixed(6), Kind::Timestamp2 { fsp: 3, digits: 3 }),
            ("timestamp2:6:0", Layout::Fixed(7), Kind::Timestamp2 { fsp: 6, digits: 0 }),
        ];
        for (text, layout, kind) in fits {
            assert_eq!(parse_kind(text, layout).ok(), Some(kind), "{text} {layout:?}");
        }
        let misfits = [
            ("int:s", Layout::Fixed(5)), ("int:s", Layout::Prefixed(1)), ("bool", Layout::Fixed(2)),
            ("text", Layout::Fixed(2)), ("decimal:10:2", Layout::Fixed(4)), ("decimal:10", Layout::Fixed(5)),
            ("decimal:39:0", Layout::Fixed(18)), ("decimal:2:3", Layout::Fixed(2)), ("date", Layout::Fixed(4)),
            ("datetime2:6:us", Layout::Fixed(7)), ("datetime2:7:us", Layout::Fixed(9)),
            ("timestamp2:3:3", Layout::Fixed(5)), ("timestamp2:x:3", Layout::Fixed(4)), ("year", Layout::Fixed(1)),
            ("", Layout::Fixed(1)),
        ];
        for (text, layout) in misfits {
            assert!(parse_kind(text, layout).is_err(), "{text} {layout:?} taken");
        }
    }

    #[test]
    fn storage_sizes() {
        assert_eq!((0..=6).map(fraction_size).collect::<Vec<_>>(), [0, 1, 1, 2, 2, 3, 3]);
        for (precision, scale, size) in [(10, 2, 5), (27, 9, 12), (38, 0, 17), (5, 1, 3), (9, 9, 4), (1, 0, 1)] {
            assert_eq!(decimal_size(precision, scale), size, "decimal({precision},{scale})");
        }
        assert_eq!((be(&[1, 2, 3]), le(&[1, 2, 3]), be(&[]), le(&[0xff; 8])), (0x010203, 0x030201, 0, u64::MAX));
    }

    #[test]
    fn integers_of_each_size_and_signedness() {
        for (bytes, size, unsigned, value) in [
            ("ff", 1, false, -1), ("ff", 1, true, 255), ("7f", 1, false, 127),
            ("ff7f", 2, false, 32767), ("0080", 2, false, -32768), ("ffff", 2, true, 65535),
            ("ffffff", 3, false, -1), ("ffffff", 3, true, 16_777_215), ("000080", 3, false, -8_388_608),
            ("ffffff7f", 4, false, 2_147_483_647), ("00000080", 4, false, -2_147_483_648),   // Debezium
            ("ffffffff", 4, true, 4_294_967_295),
            ("ffffffffffffffff", 8, false, -1), ("ffffffffffffff7f", 8, false, i64::MAX),
        ] {
            assert_eq!(int_value(&hex(bytes), size, unsigned).ok(), Some(value), "{bytes} {size} {unsigned}");
            let expected = value.to_string();
            check(Kind::Int { size, unsigned }, &[(bytes, Some(expected.as_str()))]);
        }
        // BIGINT UNSIGNED: Debezium's modes for it differ, Python decides
        assert!(int_value(&hex("ffffffffffffffff"), 8, true).is_err());
    }

    #[test]
    fn booleans_and_text() {
        check(Kind::Bool, &[("01", Some("true")), ("00", Some("false")), ("02", Some("true"))]);
        let quoted = "héllo \"quoted\"".bytes().map(|b| format!("{b:02x}")).collect::<String>();
        check(Kind::Text, &[(&quoted, Some(r#""héllo \"quoted\"""#)), ("", Some(r#""""#)),   // Debezium
                            ("0a09", Some(r#""\n\t""#))]);
        assert_eq!(json_of(Kind::Text, b"\xc3"), Err(()), "text that is not UTF-8 is for Python");
    }

    #[test]
    fn decimals_as_connects_decimal() {
        let decimal = |precision, scale| Kind::Decimal { precision, scale };
        check(decimal(10, 2), &[
            ("80bc614e5a", Some(r#""SZYC0g==""#)), ("7ffffffffe", Some(r#""/w==""#)),   // Debezium
            ("8000000132", Some(r#""AJY=""#)),                                        // Debezium (1.50)
            ("8000000000", Some(r#""AA==""#)), ("7f439eb1a5", Some(r#""tmn9Lg==""#)),
        ]);
        check(decimal(27, 9), &[("875bcd1500bc614e075bcd15", Some(r#""Zh798Vjyp/5DWRU=""#))]);
        check(decimal(38, 0), &[   // 10^38 - 1 and its negative: past Python's 28-digit Decimal context
            ("e33b9ac9ff3b9ac9ff3b9ac9ff3b9ac9ff", Some(r#""SztMqFqGxHoJiiI//////w==""#)),
            ("1cc4653600c4653600c4653600c4653600", Some(r#""tMSzV6V5O4X2dd3AAAAAAQ==""#)),
        ]);
        check(decimal(5, 1), &[("800105", Some(r#""Dw==""#))]);
        assert_eq!(decimal_unscaled(&hex("80bc614e5a"), 10, 2), Some(1_234_567_890));
        assert_eq!(decimal_unscaled(&hex("7ffffffffe"), 10, 2), Some(-1));
    }

    #[test]
    fn dates_as_epoch_days_and_zero_dates_missing() {
        check(Kind::Date, &[
            ("5dd00f", Some("19782")), ("21d007", Some("-354285")),   // Debezium: 2024-02-29, 1000-01-01
            ("9f1f4e", Some("2932896")),                              // 9999-12-31
            ("000000", None), ("0ad00f", None), ("5dce0f", None),     // 0000-00-00, 2024-00-10, 2023-02-29
        ]);
        assert_eq!(civil_micros(2024, 2, 29, 13, 45, 30, 123_456), Some(1_709_214_330_123_456));
        assert_eq!([civil_micros(0, 1, 1, 0, 0, 0, 0), civil_micros(2024, 1, 1, 24, 0, 0, 0),
                    civil_micros(2024, 1, 1, 0, 60, 0, 0), civil_micros(2024, 4, 31, 0, 0, 0, 0)], [None; 4]);
    }

    #[test]
    fn datetimes_in_micro_and_milliseconds() {
        let us = |fsp| Kind::Datetime2 { fsp, millis: false };
        let ms = |fsp| Kind::Datetime2 { fsp, millis: true };
        check(us(6), &[
            ("99b2badb5e01e240", Some("1709214330123456")),     // Debezium: 2024-02-29 13:45:30.123456
            ("fef3ff7efb0f423f", Some("253402300799999999")),   // Debezium: 9999-12-31 23:59:59.999999
        ]);
        check(us(0), &[("8cb2420000", Some("-30610224000000000")), ("8000000000", None)]);  // Debezium; zero
        check(ms(3), &[("99b2badb5e04ce", Some("1709214330123"))]);
        check(us(4), &[("99027f7efb270b", Some("-500"))]);   // 1969-12-31 23:59:59.9995
        check(ms(4), &[("99027f7efb270b", Some("-1"))]);     // floored, as Python's //
    }

    #[test]
    fn timestamps_as_zoned_timestamp() {
        let zoned = |fsp, digits| Kind::Timestamp2 { fsp, digits };
        check(zoned(6, 6), &[
            ("65e08a7a01e240", Some(r#""2024-02-29T13:45:30.123456Z""#)),   // Debezium
            ("00000001000000", Some(r#""1970-01-01T00:00:01.000000Z""#)),   // Debezium
        ]);
        check(zoned(0, 0), &[("00000000", Some(r#""1970-01-01T00:00:00Z""#)),
                             ("ffffffff", Some(r#""2106-02-07T06:28:15Z""#))]);
        check(zoned(2, 2), &[("65e08a7a0c", Some(r#""2024-02-29T13:45:30.12Z""#))]);
        check(zoned(2, 0), &[("65e08a7a0c", Some(r#""2024-02-29T13:45:30.12Z""#))]);
    }

    /// A codec of these columns, `(layout, kind, name, missing JSON)`; kind None: not in the row.
    fn codec(columns: &[(Layout, Option<Kind>, &str, &str)]) -> BinlogRowCodec {
        let mut first = true;
        let columns = columns
            .iter()
            .map(|&(layout, kind, name, missing)| Column {
                layout,
                output: kind.map(|kind| {
                    let mut prefix = vec![if first { b'{' } else { b',' }];
                    first = false;
                    prefix.extend_from_slice(format!("\"{name}\":").as_bytes());
                    (kind, prefix, missing.as_bytes().to_vec())
                }),
            })
            .collect();
        BinlogRowCodec { columns, keys: Vec::new() }
    }

    fn images(codec: &BinlogRowCodec, data: &[u8]) -> Result<Vec<(String, Vec<Span>)>, ()> {
        let (mut at, mut out) = (0, Vec::new());
        while at < data.len() {
            let mut json = Vec::new();
            let (spans, next) = codec.image_json(data, at, &mut json).map_err(|_| ())?;
            out.push((String::from_utf8(json).unwrap(), spans));
            at = next;
        }
        Ok(out)
    }

    #[test]
    fn images_with_nulls_left_out_columns_and_missing_values() {
        let c = codec(&[
            (Layout::Fixed(4), Some(Kind::Int { size: 4, unsigned: false }), "id", "null"),
            (Layout::Prefixed(1), Some(Kind::Text), "c_text", "null"),
            (Layout::Prefixed(2), None, "", "null"),   // a BLOB left out of the row struct: stepped over
            // the value Python gives a None (a NULL, a zero date) of this column: its default, say
            (Layout::Fixed(3), Some(Kind::Date), "c_date", "0"),
        ]);
        let data = hex(concat!(
            "00", "01000000", "02", "6869", "0300", "78797a", "5dd00f",   // 1, "hi", (3 bytes), 2024-02-29
            "0a", "feffffff", "0100", "7a",                               // -2, NULL, (1 byte), NULL
            "00", "03000000", "00", "0000", "000000",                     // 3, "", (none), 0000-00-00
        ));
        let read = images(&c, &data).unwrap();
        let jsons: Vec<&str> = read.iter().map(|(json, _)| json.as_str()).collect();
        assert_eq!(jsons, [r#"{"id":1,"c_text":"hi","c_date":19782}"#, r#"{"id":-2,"c_text":null,"c_date":0}"#,
                           r#"{"id":3,"c_text":"","c_date":0}"#]);
        assert_eq!(read[0].1, [Some((1, 5)), Some((6, 8)), Some((10, 13)), Some((13, 16))]);
        assert_eq!(read[1].1[1], None);
    }

    #[test]
    fn images_this_codec_does_not_read() {
        let c = codec(&[(Layout::Fixed(4), Some(Kind::Int { size: 4, unsigned: false }), "id", "null"),
                        (Layout::Prefixed(1), Some(Kind::Text), "t", "null")]);
        let good = hex("0001000000027879");
        assert_eq!(images(&c, &good).unwrap()[0].0, r#"{"id":1,"t":"xy"}"#);
        let truncated = [&good[..good.len() - 1], &good[..3], &good[..5]];
        let not_utf8 = hex("000100000001ff");
        for data in truncated.into_iter().chain([&not_utf8[..]]) {
            assert!(images(&c, data).is_err(), "{data:?}");
        }
        let mut json = Vec::new();
        assert_eq!(codec(&[]).image_json(&[], 0, &mut json).ok(), Some((vec![], 0)));
        assert_eq!(json, b"{}");
    }
}
