//! cdc's compiled row codec: one pgoutput TupleData (text format) straight into the JSON bytes
//! of Debezium's row struct, as `orjson.dumps(TableState.row(values))` writes them.
//!
//! Columns whose conversion is a plain rewrite of the server's text (integers, booleans, text-like
//! types) are written here without a Python object; every other column calls its Python converter
//! and orjson, so the output is the Python path's by construction. A row this codec cannot take
//! (an unchanged TOAST value, a binary column, a tuple of another width, an integer text that is
//! not canonical) raises `Fallback`, and the caller decodes it in Python.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

create_exception!(cdc_native, Fallback, PyException, "This row is for the Python path.");

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Bool,
    Text,
    Decimal(usize),     // numeric(p, s) in decimal.handling.mode=precise: Connect's Decimal, s digits
    ZonedTimestamp(usize), // timestamptz(p), p in 1..=6: io.debezium.time.ZonedTimestamp
    Python,
}

struct Column {
    index: usize,
    kind: Kind,
    prefix: Vec<u8>, // `{"name":` or `,"name":`
    convert: Option<PyObject>,
}

#[pyclass(frozen)]
struct RowCodec {
    columns: Vec<Column>,
    width: usize,
    keys: Vec<usize>,
    dumps: PyObject,
}

fn kind_of(name: &str) -> PyResult<Kind> {
    let bad = || pyo3::exceptions::PyValueError::new_err(format!("unknown column kind {name:?}"));
    match name.split_once(':') {
        Some(("decimal", scale)) => Ok(Kind::Decimal(scale.parse().map_err(|_| bad())?)),
        Some(("tstz", width)) => match width.parse() {
            Ok(w @ 1..=6) => Ok(Kind::ZonedTimestamp(w)),
            _ => Err(bad()),
        },
        _ => match name {
            "int" => Ok(Kind::Int),
            "bool" => Ok(Kind::Bool),
            "text" => Ok(Kind::Text),
            "python" => Ok(Kind::Python),
            _ => Err(bad()),
        },
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = ((b[0] as u32) << 16) | ((b[1] as u32) << 8) | b[2] as u32;
        out.push(BASE64[(n >> 18) as usize & 63]);
        out.push(BASE64[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 { BASE64[(n >> 6) as usize & 63] } else { b'=' });
        out.push(if chunk.len() > 2 { BASE64[n as usize & 63] } else { b'=' });
    }
}

/// numeric(p, s)'s text (exactly s fraction digits) as Connect's Decimal in JSON: the unscaled
/// value's two's-complement big-endian bytes of the smallest width, base64, in quotes. None when
/// the text is not of that form (NaN, another scale) or the value needs more than 127 bits.
fn write_decimal(out: &mut Vec<u8>, text: &[u8], scale: usize) -> Option<()> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let (whole, fraction) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (&digits[..dot], &digits[dot + 1..]),
        None => (digits, &digits[digits.len()..]),
    };
    if whole.is_empty() || fraction.len() != scale || (scale > 0 && fraction.is_empty()) {
        return None;
    }
    let mut value: i128 = 0;
    for &b in whole.iter().chain(fraction.iter()) {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add((b - b'0') as i128)?;
    }
    if negative {
        value = -value;
    }
    let magnitude = if value < 0 { (value + 1).unsigned_abs() } else { value.unsigned_abs() };
    let length = (128 - magnitude.leading_zeros() as usize) / 8 + 1;
    out.push(b'"');
    write_base64(out, &value.to_be_bytes()[16 - length..]);
    out.push(b'"');
    Some(())
}

/// timestamptz text as the connection (TimeZone=UTC) prints it, `YYYY-MM-DD hh:mm:ss[.ffffff]+00`,
/// as Debezium's ZonedTimestamp with `width` fraction digits: `YYYY-MM-DDThh:mm:ss.fffZ`. None for
/// anything else (years past 9999, BC, infinity).
fn write_zoned_timestamp(out: &mut Vec<u8>, text: &[u8], width: usize) -> Option<()> {
    if text.len() < 22 || text[4] != b'-' || text[10] != b' ' || !text.ends_with(b"+00") {
        return None;
    }
    let time = &text[11..text.len() - 3];
    let (clock, fraction) = match time.iter().position(|&b| b == b'.') {
        Some(dot) => (&time[..dot], &time[dot + 1..]),
        None => (time, &time[time.len()..]),
    };
    out.push(b'"');
    out.extend_from_slice(&text[..10]);
    out.push(b'T');
    out.extend_from_slice(clock);
    out.push(b'.');
    for i in 0..width {
        out.push(*fraction.get(i).unwrap_or(&b'0'));
    }
    out.extend_from_slice(b"Z\"");
    Some(())
}

/// JSON string escaping exactly as orjson writes it: `"` and `\` escaped, control characters as
/// `\b \t \n \f \r` or `\u00xx`, everything else (DEL, non-ASCII) as its UTF-8 bytes.
fn write_string(out: &mut Vec<u8>, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in text.iter().enumerate() {
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            b'\t' => Some(b"\\t"),
            b'\n' => Some(b"\\n"),
            0x0c => Some(b"\\f"),
            b'\r' => Some(b"\\r"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&text[start..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&text[start..]);
    out.push(b'"');
}

/// The server's integer text is already JSON when canonical: an optional minus, then digits
/// without a leading zero (what int() then orjson would print back).
fn canonical_int(text: &[u8]) -> bool {
    let digits = if text.first() == Some(&b'-') { &text[1..] } else { text };
    !digits.is_empty()
        && digits.iter().all(|b| b.is_ascii_digit())
        && (digits.len() == 1 || digits[0] != b'0')
        && !(text.len() == 2 && text == b"-0")
}

fn read_i32(data: &[u8], at: usize) -> Option<i32> {
    data.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[pymethods]
impl RowCodec {
    /// `columns`: (tuple index, field name as JSON bytes, kind, Python converter or None) in the
    /// row struct's field order; `width`: the tuple's column count; `keys`: the tuple indexes whose
    /// texts `encode` also returns; `dumps`: orjson.dumps, for the Python-converted columns.
    #[new]
    fn new(columns: Vec<(usize, Vec<u8>, String, Option<PyObject>)>, width: usize, keys: Vec<usize>,
           dumps: PyObject) -> PyResult<Self> {
        let mut out = Vec::with_capacity(columns.len());
        for (n, (index, name, kind, convert)) in columns.into_iter().enumerate() {
            let kind = kind_of(&kind)?;
            if index >= width || (kind == Kind::Python && convert.is_none()) {
                return Err(pyo3::exceptions::PyValueError::new_err("bad column specification"));
            }
            let mut prefix = vec![if n == 0 { b'{' } else { b',' }];
            prefix.extend_from_slice(&name);
            prefix.push(b':');
            out.push(Column { index, kind, prefix, convert });
        }
        if keys.iter().any(|&k| k >= width) {
            return Err(pyo3::exceptions::PyValueError::new_err("key index out of range"));
        }
        Ok(RowCodec { columns: out, width, keys, dumps })
    }

    /// The row struct's JSON, the key columns' texts (None for NULL), and the position after the
    /// TupleData that starts at `pos` in `data`.
    fn encode<'py>(&self, py: Python<'py>, data: &[u8], pos: usize)
                   -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyTuple>, usize)> {
        let count = match data.get(pos..pos + 2) {
            Some(b) => u16::from_be_bytes([b[0], b[1]]) as usize,
            None => return Err(Fallback::new_err("truncated tuple")),
        };
        if count != self.width {
            return Err(Fallback::new_err("the tuple's width is not the relation's"));
        }
        let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(count);
        let mut at = pos + 2;
        for _ in 0..count {
            match data.get(at) {
                Some(b't') => {
                    let length = read_i32(data, at + 1).ok_or_else(|| Fallback::new_err("truncated tuple"))?;
                    let start = at + 5;
                    let end = start + length.max(0) as usize;
                    values.push(Some(data.get(start..end).ok_or_else(|| Fallback::new_err("truncated tuple"))?));
                    at = end;
                }
                Some(b'n') => {
                    values.push(None);
                    at += 1;
                }
                _ => return Err(Fallback::new_err("an unchanged TOAST or binary column")),
            }
        }
        let mut out: Vec<u8> = Vec::with_capacity(64 + (at - pos) * 2);
        for column in &self.columns {
            out.extend_from_slice(&column.prefix);
            let Some(text) = values[column.index] else {
                out.extend_from_slice(b"null");
                continue;
            };
            match column.kind {
                Kind::Int => {
                    if !canonical_int(text) || text.len() > 20 {
                        return Err(Fallback::new_err("an integer text that is not canonical"));
                    }
                    out.extend_from_slice(text);
                }
                Kind::Bool => match text {
                    b"t" => out.extend_from_slice(b"true"),
                    b"f" => out.extend_from_slice(b"false"),
                    _ => return Err(Fallback::new_err("a boolean text other than t or f")),
                },
                Kind::Text => {
                    if std::str::from_utf8(text).is_err() {
                        return Err(Fallback::new_err("text that is not UTF-8"));
                    }
                    write_string(&mut out, text)
                }
                Kind::Decimal(scale) => {
                    write_decimal(&mut out, text, scale).ok_or_else(|| Fallback::new_err("a numeric text"))?
                }
                Kind::ZonedTimestamp(width) => write_zoned_timestamp(&mut out, text, width)
                    .ok_or_else(|| Fallback::new_err("a timestamptz text"))?,
                Kind::Python => {
                    let text = std::str::from_utf8(text).map_err(|_| Fallback::new_err("text that is not UTF-8"))?;
                    let convert = column.convert.as_ref().expect("checked in new");
                    let value = convert.call1(py, (PyString::new(py, text),))?;
                    let json = self.dumps.call1(py, (value,))?;
                    out.extend_from_slice(json.downcast_bound::<PyBytes>(py)?.as_bytes());
                }
            }
        }
        out.push(b'}');
        let keys: Vec<Option<Bound<'py, PyString>>> = self
            .keys
            .iter()
            .map(|&k| values[k].map(|t| PyString::new(py, std::str::from_utf8(t).unwrap_or(""))))
            .collect();
        Ok((PyBytes::new(py, &out), PyTuple::new(py, keys)?, at))
    }
}

#[pymodule]
fn cdc_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RowCodec>()?;
    m.add("Fallback", m.py().get_type::<Fallback>())?;
    Ok(())
}
