//! cdc's compiled row codec: one pgoutput TupleData (text format) straight into the JSON bytes
//! of Debezium's row struct, as `orjson.dumps(TableState.row(values))` writes them.
//!
//! Each column has a kind, chosen once per table version (cdc/sources/postgres/native_rows.py):
//! integers, booleans, text-like types, float4/float8, numeric (precise: Connect's Decimal, or
//! VariableScaleDecimal), date, time, timestamp, timestamptz and bytea are written here without a
//! Python object; a `python` column calls its Python converter and orjson inside the same call, so
//! its output is the Python path's by construction. A value whose text is not of the form its kind
//! knows (infinity, BC or five-digit years, NaN numerics, bytea's escape form...) goes through the
//! column's Python converter when it was given one, else the row raises `Fallback`. A row this codec
//! cannot take at all (an unchanged TOAST value, a binary column, a tuple of another width) raises
//! `Fallback`, and the caller decodes that row in Python.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::fmt::Write as _;

create_exception!(cdc_native, Fallback, PyException, "This row is for the Python path.");

#[derive(Clone, Copy, PartialEq, Debug)]
enum Unit {
    Milli,
    Micro,
    Nano,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Binary {
    Base64,
    Base64Url,
    Hex,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Int,
    Bool,
    Text,
    Float4,
    Float8,
    Decimal(usize),        // numeric(p, s), decimal.handling.mode=precise: Connect's Decimal, s digits
    VariableDecimal,       // numeric, precise: io.debezium.data.VariableScaleDecimal {scale, value}
    Date,                  // days since the epoch (every time.precision.mode but isostring)
    Time(Unit),            // time: ms / µs / ns past midnight
    Timestamp(Unit),       // timestamp: ms / µs / ns since the epoch
    ZonedTimestamp(usize), // timestamptz(p): io.debezium.time.ZonedTimestamp, p digits (0: trimmed)
    Bytea(Binary),         // bytea in binary.handling.mode bytes|base64 / base64-url-safe / hex
    Python,
    PythonBytes,           // as Python, the converter given the value's bytes (not UTF-8 text)
}

struct Column {
    index: usize,
    kind: Kind,
    prefix: Vec<u8>, // `{"name":` or `,"name":`
    name: Vec<u8>,   // `"name"`
    convert: Option<PyObject>,
}

/// One key column of `key_spec`: its value as the envelope's key holds it.
struct KeyColumn {
    index: usize,
    name: Py<PyString>,
    int: bool,                // an integer column: a Python int from the text
    convert: Option<PyObject>, // else the column's Python converter (None: the text as a str)
}

#[pyclass(frozen)]
struct RowCodec {
    columns: Vec<Column>,
    width: Option<usize>,
    min_width: usize,
    keys: Vec<usize>,
    key_spec: Option<Vec<KeyColumn>>,
    key_fields: Vec<usize>, // positions in `columns` whose JSON makes the key struct, in its order
    dumps: Option<PyObject>,
}

fn unit_of(name: &str) -> Option<Unit> {
    match name {
        "ms" => Some(Unit::Milli),
        "us" => Some(Unit::Micro),
        "ns" => Some(Unit::Nano),
        _ => None,
    }
}

fn kind_of(name: &str) -> PyResult<Kind> {
    let bad = || PyValueError::new_err(format!("unknown column kind {name:?}"));
    let kind = match name.split_once(':') {
        Some(("decimal", scale)) => scale.parse().ok().map(Kind::Decimal),
        Some(("tstz", width)) => match width.parse() {
            Ok(w @ 0..=6) => Some(Kind::ZonedTimestamp(w)),
            _ => None,
        },
        Some(("time", unit)) => unit_of(unit).map(Kind::Time),
        Some(("timestamp", unit)) => unit_of(unit).map(Kind::Timestamp),
        Some(("bytea", "base64")) => Some(Kind::Bytea(Binary::Base64)),
        Some(("bytea", "url")) => Some(Kind::Bytea(Binary::Base64Url)),
        Some(("bytea", "hex")) => Some(Kind::Bytea(Binary::Hex)),
        Some(("python", "bytes")) => Some(Kind::PythonBytes),
        Some(_) => None,
        None => match name {
            "int" | "int2" | "int4" | "int8" => Some(Kind::Int),
            "bool" => Some(Kind::Bool),
            "text" => Some(Kind::Text),
            "float4" => Some(Kind::Float4),
            "float8" => Some(Kind::Float8),
            "vdecimal" => Some(Kind::VariableDecimal),
            "date" => Some(Kind::Date),
            "bytea" => Some(Kind::Bytea(Binary::Base64)),
            "python" => Some(Kind::Python),
            _ => None,
        },
    };
    kind.ok_or_else(bad)
}

// ---- strings and bytes ------------------------------------------------------------------------

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn write_base64_with(out: &mut Vec<u8>, bytes: &[u8], alphabet: &[u8; 64]) {
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = ((b[0] as u32) << 16) | ((b[1] as u32) << 8) | b[2] as u32;
        out.push(alphabet[(n >> 18) as usize & 63]);
        out.push(alphabet[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 { alphabet[(n >> 6) as usize & 63] } else { b'=' });
        out.push(if chunk.len() > 2 { alphabet[n as usize & 63] } else { b'=' });
    }
}

fn write_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    write_base64_with(out, bytes, BASE64)
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

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// bytea's hex output (`\x0aff`, what the connection's bytea_output=hex makes the server send) as
/// binary.handling.mode writes it; None for the escape form.
fn write_bytea(out: &mut Vec<u8>, text: &[u8], mode: Binary) -> Option<()> {
    let hex = text.strip_prefix(b"\\x")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let mut bytes = Vec::with_capacity(hex.len() / 2);
    for pair in hex.chunks(2) {
        bytes.push(hex_value(pair[0])? << 4 | hex_value(pair[1])?);
    }
    out.push(b'"');
    match mode {
        Binary::Base64 => write_base64(out, &bytes),
        Binary::Base64Url => write_base64_with(out, &bytes, BASE64_URL),
        Binary::Hex => out.extend(hex.iter().map(|b| b.to_ascii_lowercase())),
    }
    out.push(b'"');
    Some(())
}

// ---- integers ---------------------------------------------------------------------------------

/// The server's integer text is already JSON when canonical: an optional minus, then digits
/// without a leading zero (what int() then orjson would print back).
fn canonical_int(text: &[u8]) -> bool {
    let digits = if text.first() == Some(&b'-') { &text[1..] } else { text };
    !digits.is_empty()
        && digits.len() <= 19
        && digits.iter().all(|b| b.is_ascii_digit())
        && (digits.len() == 1 || digits[0] != b'0')
        && text != b"-0"
}

fn write_i64(out: &mut Vec<u8>, value: i64) {
    let mut buffer = itoa_buffer();
    out.extend_from_slice(format_i64(&mut buffer, value));
}

fn itoa_buffer() -> [u8; 20] {
    [0; 20]
}

fn format_i64(buffer: &mut [u8; 20], value: i64) -> &[u8] {
    let mut n = value.unsigned_abs();
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if value < 0 {
        at -= 1;
        buffer[at] = b'-';
    }
    &buffer[at..]
}

// ---- floats -----------------------------------------------------------------------------------

/// A finite double as orjson prints it: the shortest digits that read back as the same double,
/// plain from 1e-5 up to below 1e16 (with `.0` when integral), else `d.ddde+N` / `d.ddde-N`.
fn write_f64(out: &mut Vec<u8>, value: f64) {
    if value == 0.0 {
        out.extend_from_slice(if value.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    // Ryū's shortest digits (ties to even, as orjson's), laid out again in orjson's way
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(value.abs()).as_bytes();
    let (mantissa, mut exponent) = match text.iter().position(|&b| b == b'e') {
        Some(e) => (&text[..e], std::str::from_utf8(&text[e + 1..]).ok().and_then(|x| x.parse().ok()).unwrap_or(0)),
        None => (text, 0i32),
    };
    let point = mantissa.iter().position(|&b| b == b'.').unwrap_or(mantissa.len()) as i32;
    let mut digits: Vec<u8> = mantissa.iter().copied().filter(|&b| b != b'.').collect();
    let leading = digits.iter().position(|&b| b != b'0').unwrap_or(0);
    exponent += point - 1 - leading as i32;
    digits.drain(..leading);
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    if value < 0.0 {
        out.push(b'-');
    }
    if (-5..16).contains(&exponent) {
        if exponent < 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(&digits);
        } else {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.extend_from_slice(&digits);
                out.extend(std::iter::repeat_n(b'0', whole - digits.len()));
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&digits[..whole]);
                out.push(b'.');
                out.extend_from_slice(&digits[whole..]);
            }
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let _ = write!(ByteWriter(out), "{}", exponent.abs());
    }
}

struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A float text the server sends: digits, sign, point, exponent (the special values are handled
/// before). Anything else (Rust would read "inf" or "nan" too) is for the Python path.
fn float_text(text: &[u8]) -> Option<&str> {
    if text.is_empty() || !text.iter().all(|&b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')) {
        return None;
    }
    std::str::from_utf8(text).ok()
}

fn write_special_float(out: &mut Vec<u8>, text: &[u8]) -> bool {
    match text {
        b"NaN" | b"Infinity" | b"-Infinity" => {
            out.push(b'"');
            out.extend_from_slice(text);
            out.push(b'"');
            true
        }
        _ => false,
    }
}

/// float8: float(text), then orjson.
fn write_float8(out: &mut Vec<u8>, text: &[u8]) -> Option<()> {
    if write_special_float(out, text) {
        return Some(());
    }
    let value: f64 = float_text(text)?.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    write_f64(out, value);
    Some(())
}

const F32_MIN_NORMAL: f32 = 1.175_494_4e-38;

/// float4 as cdc.core.encodings.float32 gives it (Java's Float.toString: the float32 the text rounds
/// to, written with the fewest of 6..9 significant digits that read back as it, 1..9 below the
/// normal range, and two rather than one), then orjson.
fn write_float4(out: &mut Vec<u8>, text: &[u8]) -> Option<()> {
    if write_special_float(out, text) {
        return Some(());
    }
    let f: f32 = float_text(text)?.parse().ok()?;
    if f.is_infinite() {
        out.extend_from_slice(if f > 0.0 { b"\"Infinity\"" } else { b"\"-Infinity\"" });
        return Some(());
    }
    if f == 0.0 {
        write_f64(out, f as f64);
        return Some(());
    }
    let normal = f.abs() >= F32_MIN_NORMAL;
    if normal {
        // A normal float32's shortest decimal of at most 6 digits is also its nearest 6-digit one
        // (it lies within half an ulp, < 6e-8 relative; 6-digit steps are >= 1e-6 relative), which
        // is what the search below starts with: take it without the search.
        let mut buffer = ryu::Buffer::new();
        let shortest = buffer.format_finite(f.abs());
        let significant = shortest.bytes().take_while(|&b| b != b'e').filter(u8::is_ascii_digit)
            .skip_while(|&b| b == b'0').collect::<Vec<u8>>();
        let trimmed = significant.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
        if trimmed <= 6 {
            let value: f64 = shortest.parse().ok()?;
            write_f64(out, if f < 0.0 { -value } else { value });
            return Some(());
        }
    }
    let first = if normal { 7 } else { 1 };
    let mut candidate = String::with_capacity(32);
    for digits in first..10usize {
        candidate.clear();
        let _ = write!(candidate, "{:.*e}", digits - 1, f as f64);
        if candidate.parse::<f32>().ok()? == f {
            if digits == 1 {
                candidate.clear();
                let _ = write!(candidate, "{:.1e}", f as f64);
            }
            write_f64(out, candidate.parse::<f64>().ok()?);
            return Some(());
        }
    }
    write_f64(out, f as f64);
    Some(())
}

// ---- numerics ---------------------------------------------------------------------------------

/// The unscaled value `[-]digits` as Connect's Decimal in JSON: its two's-complement big-endian
/// bytes of the smallest width (Python's `decimal_bytes`), base64, in quotes. None past 127 bits.
fn write_unscaled(out: &mut Vec<u8>, negative: bool, digits: impl Iterator<Item = u8>) -> Option<()> {
    let mut value: i128 = 0; // accumulated with its sign, so that i128::MIN fits
    let sign = if negative { -1 } else { 1 };
    for d in digits {
        value = value.checked_mul(10)?.checked_add(sign * (d - b'0') as i128)?;
    }
    write_unscaled_value(out, value);
    Some(())
}

/// An unscaled value as Connect's Decimal in JSON (Python's `decimal_bytes`, in quotes).
fn write_unscaled_value(out: &mut Vec<u8>, value: i128) {
    let magnitude = if value < 0 { (value + 1).unsigned_abs() } else { value.unsigned_abs() };
    let length = (128 - magnitude.leading_zeros() as usize) / 8 + 1;
    out.push(b'"');
    write_base64(out, &value.to_be_bytes()[16 - length..]);
    out.push(b'"');
}

/// `[-]digits[.digits]` split into (negative, whole, fraction); None for anything else.
fn numeric_parts(text: &[u8]) -> Option<(bool, &[u8], &[u8])> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let (whole, fraction) = match digits.iter().position(|&b| b == b'.') {
        Some(dot) => (&digits[..dot], &digits[dot + 1..]),
        None => (digits, &digits[digits.len()..]),
    };
    if whole.is_empty() || !whole.iter().chain(fraction.iter()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((negative, whole, fraction))
}

/// numeric(p, s)'s text (exactly s fraction digits) as Connect's Decimal. None for another form
/// (another scale; NaN and the infinities, which the Python path writes as null).
fn write_decimal(out: &mut Vec<u8>, text: &[u8], scale: usize) -> Option<()> {
    let (negative, whole, fraction) = numeric_parts(text)?;
    if fraction.len() != scale || (scale == 0 && text.contains(&b'.')) {
        return None;
    }
    write_unscaled(out, negative, whole.iter().chain(fraction.iter()).copied())
}

/// numeric without a typmod as VariableScaleDecimal: `{"scale":n,"value":"<Decimal bytes>"}` of the
/// value with its fraction's trailing zeros stripped. None for NaN and the infinities (the Python
/// path writes null) and past 127 bits.
fn write_variable_decimal(out: &mut Vec<u8>, text: &[u8]) -> Option<()> {
    let (negative, whole, fraction) = numeric_parts(text)?;
    let kept = fraction.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1);
    out.extend_from_slice(b"{\"scale\":");
    write_i64(out, kept as i64);
    out.extend_from_slice(b",\"value\":");
    write_unscaled(out, negative, whole.iter().chain(fraction[..kept].iter()).copied())?;
    out.push(b'}');
    Some(())
}

// ---- dates and times --------------------------------------------------------------------------

const DAY_US: i64 = 86_400_000_000;

fn digits_value(text: &[u8]) -> Option<i64> {
    if text.is_empty() || !text.iter().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.iter().fold(0i64, |v, &b| v * 10 + (b - b'0') as i64))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + (month <= 2) as i64, month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `YYYY-MM-DD` with a year 1..=9999 (what Python's date.fromisoformat reads) as epoch days.
fn date_days(text: &[u8]) -> Option<i64> {
    if text.len() != 10 || text[4] != b'-' || text[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits_value(&text[..4])?, digits_value(&text[5..7])?, digits_value(&text[8..])?);
    if year < 1 || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// A fraction of a second, 1..=6 digits, as microseconds.
fn fraction_micros(fraction: &[u8]) -> Option<i64> {
    if fraction.is_empty() || fraction.len() > 6 {
        return None;
    }
    let value = digits_value(fraction)?;
    Some(value * 10i64.pow(6 - fraction.len() as u32))
}

/// `hh:mm:ss[.ffffff]` as microseconds past midnight; `max_hour` 24 for time (24:00:00), else 23.
fn clock_micros(text: &[u8], max_hour: i64) -> Option<i64> {
    if text.len() < 8 || text[2] != b':' || text[5] != b':' {
        return None;
    }
    let (h, m, s) = (digits_value(&text[..2])?, digits_value(&text[3..5])?, digits_value(&text[6..8])?);
    if h > max_hour || m > 59 || s > 59 || (h == 24 && (m, s) != (0, 0)) {
        return None;
    }
    let mut micros = (h * 3600 + m * 60 + s) * 1_000_000;
    if text.len() > 8 {
        if text[8] != b'.' {
            return None;
        }
        let fraction = fraction_micros(&text[9..])?;
        if h == 24 && fraction != 0 {
            return None;
        }
        micros += fraction;
    }
    Some(micros)
}

fn scale_micros(micros: i64, unit: Unit) -> Option<i64> {
    match unit {
        Unit::Milli => Some(micros.div_euclid(1000)),
        Unit::Micro => Some(micros),
        Unit::Nano => micros.checked_mul(1000),
    }
}

/// `YYYY-MM-DD hh:mm:ss[.ffffff]` (year 1..=9999) as epoch microseconds.
fn timestamp_micros(text: &[u8]) -> Option<i64> {
    if text.len() < 19 || text[10] != b' ' {
        return None;
    }
    let days = date_days(&text[..10])?;
    Some(days * DAY_US + clock_micros(&text[11..], 23)?)
}

/// The fraction as ZonedTimestamp prints it: exactly `width` digits, or (0) trimmed and none if zero.
fn write_fraction(out: &mut Vec<u8>, micros: i64, width: usize) {
    let mut digits = [b'0'; 6];
    let mut n = micros;
    for i in (0..6).rev() {
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    let shown = if width == 0 { digits.iter().rposition(|&b| b != b'0').map_or(0, |i| i + 1) } else { width };
    if shown > 0 {
        out.push(b'.');
        out.extend_from_slice(&digits[..shown]);
    }
}

fn write_two(out: &mut Vec<u8>, value: i64) {
    out.push(b'0' + (value / 10) as u8);
    out.push(b'0' + (value % 10) as u8);
}

/// timestamptz as Debezium's ZonedTimestamp in UTC: `YYYY-MM-DDThh:mm:ss[.fff]Z`, `width` fraction
/// digits (0: trimmed), from `YYYY-MM-DD hh:mm:ss[.ffffff]+00`, what the server sends under the
/// connection's TimeZone=UTC. None for anything else (another offset, years past 9999, BC,
/// infinity: the Python path).
fn write_zoned_timestamp(out: &mut Vec<u8>, text: &[u8], width: usize) -> Option<()> {
    let local = text.strip_suffix(b"+00")?;
    write_zoned_micros(out, timestamp_micros(local)?, width);
    Some(())
}

/// Epoch microseconds (years 0..=9999) as a ZonedTimestamp in UTC, `width` fraction digits (0: trimmed).
fn write_zoned_micros(out: &mut Vec<u8>, micros: i64, width: usize) {
    let days = micros.div_euclid(DAY_US);
    let rest = micros.rem_euclid(DAY_US);
    let (year, month, day) = civil_from_days(days);
    let seconds = rest / 1_000_000;
    out.push(b'"');
    write_two(out, year / 100);
    write_two(out, year % 100);
    out.push(b'-');
    write_two(out, month);
    out.push(b'-');
    write_two(out, day);
    out.push(b'T');
    write_two(out, seconds / 3600);
    out.push(b':');
    write_two(out, seconds / 60 % 60);
    out.push(b':');
    write_two(out, seconds % 60);
    write_fraction(out, rest % 1_000_000, width);
    out.extend_from_slice(b"Z\"");
}

fn read_i32(data: &[u8], at: usize) -> Option<i32> {
    data.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn fallback(why: &str) -> PyErr {
    Fallback::new_err(why.to_string())
}

impl RowCodec {
    /// One value as Python converts it: `convert(text)` (`convert(bytes)` for `PythonBytes`), then orjson.
    fn write_python(&self, py: Python<'_>, out: &mut Vec<u8>, column: &Column, convert: &PyObject, text: &[u8])
                    -> PyResult<()> {
        let dumps = self.dumps.as_ref().expect("checked in new");
        let value = if column.kind == Kind::PythonBytes {
            convert.call1(py, (PyBytes::new(py, text),))?
        } else {
            let text = std::str::from_utf8(text).map_err(|_| fallback("text that is not UTF-8"))?;
            convert.call1(py, (PyString::new(py, text),))?
        };
        let json = dumps.call1(py, (value,))?;
        out.extend_from_slice(json.downcast_bound::<PyBytes>(py)?.as_bytes());
        Ok(())
    }

    /// One value in the column's kind; a text of another form than the kind's (infinity, BC...) by
    /// the column's Python converter when it has one, else `Fallback` (the row is for Python).
    fn write_value(&self, py: Python<'_>, out: &mut Vec<u8>, column: &Column, text: &[u8]) -> PyResult<()> {
        let mark = out.len();
        if write_text(out, column.kind, text).is_some() {
            return Ok(());
        }
        out.truncate(mark);
        match &column.convert {
            Some(convert) => self.write_python(py, out, column, convert, text),
            None => Err(Fallback::new_err(format!("a {:?} text this codec does not write", column.kind))),
        }
    }
}

/// bool's text, `t` or `f`, as JSON.
fn write_bool(out: &mut Vec<u8>, text: &[u8]) -> Option<()> {
    let json: &[u8] = match text {
        b"t" => b"true",
        b"f" => b"false",
        _ => return None,
    };
    out.extend_from_slice(json);
    Some(())
}

/// One value's text in its kind, without Python: None (and `out` possibly written to, which the
/// caller truncates) for a text of another form than the kind's, and always for `Python`.
fn write_text(out: &mut Vec<u8>, kind: Kind, text: &[u8]) -> Option<()> {
    match kind {
        Kind::Int => canonical_int(text).then(|| out.extend_from_slice(text)),
        Kind::Bool => write_bool(out, text),
        Kind::Text => std::str::from_utf8(text).is_ok().then(|| write_string(out, text)),
        Kind::Float4 => write_float4(out, text),
        Kind::Float8 => write_float8(out, text),
        Kind::Decimal(scale) => write_decimal(out, text, scale),
        Kind::VariableDecimal => write_variable_decimal(out, text),
        Kind::Date => date_days(text).map(|days| write_i64(out, days)),
        Kind::Time(unit) => clock_micros(text, 24)
            .and_then(|micros| scale_micros(micros, unit))
            .map(|v| write_i64(out, v)),
        Kind::Timestamp(unit) => timestamp_micros(text).map(|micros| match scale_micros(micros, unit) {
            Some(v) => write_i64(out, v),
            None => out.extend_from_slice(b"null"), // nanoseconds past int64: Debezium writes null
        }),
        Kind::ZonedTimestamp(width) => write_zoned_timestamp(out, text, width),
        Kind::Bytea(mode) => write_bytea(out, text, mode),
        Kind::Python | Kind::PythonBytes => None,
    }
}

#[pymethods]
impl RowCodec {
    /// `columns`: per output field, in the row struct's order, `(tuple index, name, kind)` or
    /// `(tuple index, name, kind, converter)`; the name a str, or bytes already JSON (`b'"id"'`);
    /// the converter (a Python callable) is required for kind `python`; for another kind it takes
    /// the texts the kind does not (infinity, BC...), which otherwise raise `Fallback`. `width`: the tuple's column count, if
    /// it is to be checked; `keys`: tuple indexes whose texts `encode` also returns; `dumps`:
    /// orjson.dumps, for `python` columns. `key_spec`: instead of the key texts, `encode` returns
    /// the envelope's key as a dict, one entry per `(tuple index, name, "int" | "str" | "python",
    /// converter)`: an int parsed here, the text as a str, or `converter(text)`. `key_fields`: the
    /// positions in `columns` of the key struct's fields, in its order, for `encode_copy_batch`.
    #[new]
    #[pyo3(signature = (columns, width=None, keys=None, dumps=None, key_spec=None, key_fields=None))]
    fn new(columns: Vec<Bound<'_, PyTuple>>, width: Option<usize>, keys: Option<Vec<usize>>,
           dumps: Option<PyObject>, key_spec: Option<Vec<Bound<'_, PyTuple>>>,
           key_fields: Option<Vec<usize>>) -> PyResult<Self> {
        let bad = |why: &str| PyValueError::new_err(format!("bad column specification: {why}"));
        let mut out = Vec::with_capacity(columns.len());
        let mut min_width = 0;
        for (n, spec) in columns.iter().enumerate() {
            if spec.len() != 3 && spec.len() != 4 {
                return Err(bad("(index, name, kind[, converter]) expected"));
            }
            let index: usize = spec.get_item(0)?.extract()?;
            let name = spec.get_item(1)?;
            let kind = kind_of(&spec.get_item(2)?.extract::<String>()?)?;
            let convert = if spec.len() == 4 && !spec.get_item(3)?.is_none() {
                Some(spec.get_item(3)?.unbind())
            } else {
                None
            };
            if (matches!(kind, Kind::Python | Kind::PythonBytes) && convert.is_none()) || (convert.is_some() && dumps.is_none()) {
                return Err(bad("a python column needs its converter, a converter needs dumps"));
            }
            if width.is_some_and(|w| index >= w) {
                return Err(bad("a tuple index past the width"));
            }
            min_width = min_width.max(index + 1);
            let mut name_json = Vec::new();
            if let Ok(json) = name.downcast::<PyBytes>() {
                name_json.extend_from_slice(json.as_bytes());
            } else {
                write_string(&mut name_json, name.extract::<String>()?.as_bytes());
            }
            let mut prefix = vec![if n == 0 { b'{' } else { b',' }];
            prefix.extend_from_slice(&name_json);
            prefix.push(b':');
            out.push(Column { index, kind, prefix, name: name_json, convert });
        }
        let keys = keys.unwrap_or_default();
        if let Some(&k) = keys.iter().find(|&&k| k >= width.unwrap_or(usize::MAX)) {
            return Err(PyValueError::new_err(format!("key index {k} out of range")));
        }
        min_width = keys.iter().fold(min_width, |m, &k| m.max(k + 1));
        let key_spec = match key_spec {
            None => None,
            Some(specs) => {
                let mut parsed = Vec::with_capacity(specs.len());
                for spec in specs {
                    if spec.len() != 4 {
                        return Err(bad("key_spec: (index, name, mode, converter) expected"));
                    }
                    let index: usize = spec.get_item(0)?.extract()?;
                    if width.is_some_and(|w| index >= w) {
                        return Err(PyValueError::new_err(format!("key index {index} out of range")));
                    }
                    min_width = min_width.max(index + 1);
                    let name = spec.get_item(1)?.downcast_into::<PyString>()?.unbind();
                    let mode: String = spec.get_item(2)?.extract()?;
                    let convert = spec.get_item(3)?;
                    let convert = if convert.is_none() { None } else { Some(convert.unbind()) };
                    if mode != "str" && convert.is_none() || !["int", "str", "python"].contains(&mode.as_str()) {
                        return Err(bad("key_spec: mode int or python with its converter, or str"));
                    }
                    let convert = if mode == "str" { None } else { convert };
                    parsed.push(KeyColumn { index, name, int: mode == "int", convert });
                }
                Some(parsed)
            }
        };
        let key_fields = key_fields.unwrap_or_default();
        if key_fields.iter().any(|&k| k >= out.len()) {
            return Err(bad("a key field past the columns"));
        }
        Ok(RowCodec { columns: out, width, min_width, keys, key_spec, key_fields, dumps })
    }

    /// The kinds of the columns, in order (what `new` understood).
    fn kinds(&self) -> Vec<String> {
        self.columns.iter().map(|c| format!("{:?}", c.kind)).collect()
    }

    /// `(row struct JSON, key texts (None for NULL), position after the TupleData)` for the
    /// TupleData that starts at `pos` in `data`; `Fallback` for a row for the Python path.
    fn encode<'py>(&self, py: Python<'py>, data: &[u8], pos: usize)
                   -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyAny>, usize)> {
        let (values, at) = self.tuple_values(data, pos)?;
        let (json, keys) = self.write_row(py, &values, at - pos)?;
        Ok((json, keys, at))
    }

    /// `(row struct JSON, key texts)` for one row of `COPY ... TO STDOUT` in text format (the line
    /// without its newline): tab-separated fields, `\N` for NULL, backslash escapes; the same
    /// texts pgoutput sends, so the same column writers. `Fallback` for a row for the Python path.
    fn encode_copy<'py>(&self, py: Python<'py>, line: &[u8])
                        -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyAny>)> {
        let fields = split_copy(line);
        let values = copy_values(&fields);
        self.check_width(values.len())?;
        self.write_row(py, &values, line.len())
    }

    /// A batch of COPY lines (as `encode_copy` takes them) in one call: `(row struct JSONs, key
    /// struct JSONs)`, the keys written from the row's own field JSON by `key_fields` (None when
    /// it names none). `Fallback` when any row is for the Python path; nothing is returned then.
    fn encode_copy_batch<'py>(&self, py: Python<'py>, lines: Vec<Bound<'py, PyBytes>>)
                              -> PyResult<(Bound<'py, PyList>, Option<Bound<'py, PyList>>)> {
        self.encode_batch(py, &lines, |line, write| write(&copy_values(&split_copy(line.as_bytes()))))
    }

    /// pgoutput messages whose TupleData starts at `pos` (a run of Inserts, or Updates without an old
    /// tuple, of one relation), encoded as `encode_copy_batch` encodes COPY lines. `Fallback` when
    /// any of them is for the Python path (an unchanged TOAST value...); nothing is returned then.
    fn encode_tuples<'py>(&self, py: Python<'py>, payloads: Vec<Bound<'py, PyBytes>>, pos: usize)
                          -> PyResult<(Bound<'py, PyList>, Option<Bound<'py, PyList>>)> {
        self.encode_batch(py, &payloads, |payload, write| write(&self.tuple_values(payload.as_bytes(), pos)?.0))
    }

    /// Rows of MySQL's text protocol (result set row packets' payloads, as a `SELECT` returns them:
    /// length-encoded strings, 0xFB for NULL), encoded as `encode_copy_batch` encodes COPY lines: the
    /// same texts for numbers, decimals, dates and timestamps. `Fallback` for a malformed packet or
    /// any row for the Python path; nothing is returned then.
    fn encode_text_rows<'py>(&self, py: Python<'py>, packets: Vec<Bound<'py, PyBytes>>)
                             -> PyResult<(Bound<'py, PyList>, Option<Bound<'py, PyList>>)> {
        self.encode_batch(py, &packets, |packet, write| {
            write(&text_protocol_values(packet.as_bytes()).ok_or_else(|| fallback("a malformed row packet"))?)
        })
    }
}

impl RowCodec {
    /// Rows encoded one by one: `with_values(item, write)` calls `write` with the item's values
    /// (None for NULL); `(row struct JSONs, key struct JSONs by key_fields)`.
    #[allow(clippy::type_complexity)]
    fn encode_batch<'py, T>(&self, py: Python<'py>, items: &[T],
                            with_values: impl Fn(&T, &mut dyn FnMut(&[Option<&[u8]>]) -> PyResult<()>) -> PyResult<()>)
                            -> PyResult<(Bound<'py, PyList>, Option<Bound<'py, PyList>>)> {
        let rows = PyList::empty(py);
        let keys = (!self.key_fields.is_empty()).then(|| PyList::empty(py));
        let mut out: Vec<u8> = Vec::with_capacity(256);
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(self.columns.len());
        let mut key: Vec<u8> = Vec::with_capacity(64);
        for item in items {
            with_values(item, &mut |values| {
                self.check_width(values.len())?;
                out.clear();
                spans.clear();
                self.write_fields(py, values, &mut out, &mut spans)?;
                rows.append(PyBytes::new(py, &out))?;
                if let Some(keys) = &keys {
                    key.clear();
                    self.write_key(&out, &spans, &mut key);
                    keys.append(PyBytes::new(py, &key))?;
                }
                Ok(())
            })?;
        }
        Ok((rows, keys))
    }
}

/// The values of one row of MySQL's text protocol (a result set row packet's payload, as
/// `SELECT` returns it): each a length-encoded string, 0xFB for NULL. None for a malformed packet.
fn text_protocol_values(packet: &[u8]) -> Option<Vec<Option<&[u8]>>> {
    let mut values = Vec::new();
    let mut at = 0;
    while at < packet.len() {
        let length_at = |size: usize| -> Option<usize> {
            let bytes = packet.get(at + 1..at + 1 + size)?;
            Some(bytes.iter().rev().fold(0usize, |n, &b| (n << 8) | b as usize))
        };
        let (length, header) = match packet[at] {
            0xfb => {
                values.push(None);
                at += 1;
                continue;
            }
            0xfc => (length_at(2)?, 3),
            0xfd => (length_at(3)?, 4),
            0xfe => (length_at(8)?, 9),
            0xff => return None,
            small => (small as usize, 1),
        };
        let start = at + header;
        let end = start.checked_add(length)?;
        values.push(Some(packet.get(start..end)?));
        at = end;
    }
    Some(values)
}

/// One field of a COPY text line.
enum CopyField<'a> {
    Null,
    Plain(&'a [u8]),
    Escaped(Vec<u8>), // with its backslash escapes resolved
}

/// A COPY text line (without its newline) as its tab-separated fields.
fn split_copy(line: &[u8]) -> Vec<CopyField<'_>> {
    line.split(|&b| b == b'\t')
        .map(|field| {
            if field == b"\\N" {
                CopyField::Null
            } else if field.contains(&b'\\') {
                CopyField::Escaped(unescape_copy(field))
            } else {
                CopyField::Plain(field)
            }
        })
        .collect()
}

fn copy_values<'a>(fields: &'a [CopyField<'_>]) -> Vec<Option<&'a [u8]>> {
    fields
        .iter()
        .map(|field| match field {
            CopyField::Null => None,
            CopyField::Plain(text) => Some(*text),
            CopyField::Escaped(buffer) => Some(buffer.as_slice()),
        })
        .collect()
}

/// A COPY text field with its backslash escapes resolved (\b \f \n \r \t \v, else the
/// character itself; COPY TO writes no octal or hex escapes).
fn unescape_copy(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'b') => out.push(0x08),
            Some(b'f') => out.push(0x0c),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b't') => out.push(b'\t'),
            Some(b'v') => out.push(0x0b),
            Some(&other) => out.push(other),
            None => out.push(b'\\'),
        }
    }
    out
}

impl RowCodec {
    /// The row struct's JSON and the key texts from the row's values (None for NULL), or the key
    /// dict when the codec has a `key_spec`.
    fn write_row<'py>(&self, py: Python<'py>, values: &[Option<&[u8]>], size: usize)
                      -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyAny>)> {
        let mut out: Vec<u8> = Vec::with_capacity(64 + size * 2);
        let mut spans = Vec::with_capacity(self.columns.len());
        self.write_fields(py, values, &mut out, &mut spans)?;
        if let Some(spec) = &self.key_spec {
            let key = PyDict::new(py);
            for column in spec {
                let value: Bound<'py, PyAny> = match values[column.index] {
                    None => py.None().into_bound(py),
                    Some(text) => self.key_value(py, column, text)?,
                };
                key.set_item(column.name.bind(py), value)?;
            }
            return Ok((PyBytes::new(py, &out), key.into_any()));
        }
        let keys: Vec<Option<Bound<'py, PyString>>> = self
            .keys
            .iter()
            .map(|&k| values[k].map(|t| PyString::new(py, std::str::from_utf8(t).unwrap_or(""))))
            .collect();
        Ok((PyBytes::new(py, &out), PyTuple::new(py, keys)?.into_any()))
    }

    /// The texts of the TupleData that starts at `pos` in `data` (None for NULL) and the position
    /// after it; `Fallback` for a tuple this codec does not read (unchanged TOAST, binary, another
    /// width, truncated).
    fn tuple_values<'a>(&self, data: &'a [u8], pos: usize) -> PyResult<(Vec<Option<&'a [u8]>>, usize)> {
        let count = match data.get(pos..pos + 2) {
            Some(b) => u16::from_be_bytes([b[0], b[1]]) as usize,
            None => return Err(fallback("truncated tuple")),
        };
        if self.width.is_some_and(|w| w != count) || count < self.min_width {
            return Err(fallback("the tuple's width is not the relation's"));
        }
        let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(count);
        let mut at = pos + 2;
        for _ in 0..count {
            match data.get(at) {
                Some(b't') => {
                    let length = read_i32(data, at + 1).ok_or_else(|| fallback("truncated tuple"))?;
                    let start = at + 5;
                    let end = start + length.max(0) as usize;
                    values.push(Some(data.get(start..end).ok_or_else(|| fallback("truncated tuple"))?));
                    at = end;
                }
                Some(b'n') => {
                    values.push(None);
                    at += 1;
                }
                Some(b'u') => return Err(fallback("an unchanged TOAST column")),
                Some(b'b') => return Err(fallback("a binary column")),
                _ => return Err(fallback("a malformed tuple")),
            }
        }
        Ok((values, at))
    }

    /// The key struct's JSON (`key_fields`, in its order) from a row's JSON and its values' spans.
    fn write_key(&self, row: &[u8], spans: &[(usize, usize)], key: &mut Vec<u8>) {
        for (n, &field) in self.key_fields.iter().enumerate() {
            key.push(if n == 0 { b'{' } else { b',' });
            key.extend_from_slice(&self.columns[field].name);
            key.push(b':');
            let (start, end) = spans[field];
            key.extend_from_slice(&row[start..end]);
        }
        key.push(b'}');
    }

    fn check_width(&self, width: usize) -> PyResult<()> {
        if self.width.is_some_and(|w| w != width) || width < self.min_width {
            return Err(fallback("the row's width is not the table's"));
        }
        Ok(())
    }

    /// The row struct's JSON into `out`, and where each column's value lies in it into `spans`.
    fn write_fields(&self, py: Python<'_>, values: &[Option<&[u8]>], out: &mut Vec<u8>,
                    spans: &mut Vec<(usize, usize)>) -> PyResult<()> {
        self.lay_out(values, out, spans, |out, column, text| self.write_value(py, out, column, text))
    }

    /// The row struct around its values: each column's prefix, then `null` or what `write` writes
    /// for its text; where each value lies into `spans`.
    fn lay_out(&self, values: &[Option<&[u8]>], out: &mut Vec<u8>, spans: &mut Vec<(usize, usize)>,
               mut write: impl FnMut(&mut Vec<u8>, &Column, &[u8]) -> PyResult<()>) -> PyResult<()> {
        for column in &self.columns {
            out.extend_from_slice(&column.prefix);
            let start = out.len();
            match values[column.index] {
                None => out.extend_from_slice(b"null"),
                Some(text) => write(out, column, text)?,
            }
            spans.push((start, out.len()));
        }
        if out.is_empty() {
            out.push(b'{');
        }
        out.push(b'}');
        Ok(())
    }

    /// A key column's value as its Python converter gives it: an int parsed here when canonical,
    /// the text as a str, else the converter's result.
    fn key_value<'py>(&self, py: Python<'py>, column: &KeyColumn, text: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let string = std::str::from_utf8(text).map_err(|_| fallback("text that is not UTF-8"))?;
        if column.int && canonical_int(text) {
            if let Ok(value) = string.parse::<i64>() {
                return Ok(value.into_pyobject(py)?.into_any());
            }
        }
        match &column.convert {
            Some(convert) => Ok(convert.bind(py).call1((PyString::new(py, string),))?),
            None => Ok(PyString::new(py, string).into_any()),
        }
    }
}

/// The records of a batch the codec encoded, put together around their fixed pieces: record i is
/// `pieces[0] + parts[0][i] + pieces[1] + parts[1][i] + ... + pieces[n]` (n parts, n + 1 pieces).
fn spliced_lengths(pieces: &[Bound<'_, PyBytes>], parts: &[Vec<Bound<'_, PyBytes>>]) -> PyResult<(usize, usize)> {
    if pieces.len() != parts.len() + 1 {
        return Err(PyValueError::new_err("splice: one piece more than there are parts"));
    }
    let count = parts.first().map_or(0, Vec::len);
    if parts.iter().any(|p| p.len() != count) {
        return Err(PyValueError::new_err("splice: parts of different lengths"));
    }
    let fixed: usize = pieces.iter().map(|p| p.as_bytes().len()).sum();
    let variable: usize = parts.iter().flatten().map(|b| b.as_bytes().len()).sum();
    Ok((count, fixed * count + variable))
}

fn splice_record(out: &mut Vec<u8>, pieces: &[Bound<'_, PyBytes>], parts: &[Vec<Bound<'_, PyBytes>>], i: usize) {
    for (piece, part) in pieces.iter().zip(parts) {
        out.extend_from_slice(piece.as_bytes());
        out.extend_from_slice(part[i].as_bytes());
    }
    out.extend_from_slice(pieces[pieces.len() - 1].as_bytes());
}

/// Every record spliced (see `spliced_lengths`), one after the other, as one bytes: a file's lines.
#[pyfunction]
fn splice<'py>(py: Python<'py>, pieces: Vec<Bound<'py, PyBytes>>, parts: Vec<Vec<Bound<'py, PyBytes>>>)
               -> PyResult<Bound<'py, PyBytes>> {
    let (count, total) = spliced_lengths(&pieces, &parts)?;
    let mut out = Vec::with_capacity(total);
    for i in 0..count {
        splice_record(&mut out, &pieces, &parts, i);
    }
    Ok(PyBytes::new(py, &out))
}

/// Every record spliced (see `spliced_lengths`), each its own bytes: Kafka messages.
#[pyfunction]
fn splice_each<'py>(py: Python<'py>, pieces: Vec<Bound<'py, PyBytes>>, parts: Vec<Vec<Bound<'py, PyBytes>>>)
                    -> PyResult<Bound<'py, PyList>> {
    let (count, total) = spliced_lengths(&pieces, &parts)?;
    let list = PyList::empty(py);
    let mut out = Vec::with_capacity(total.checked_div(count).map_or(0, |each| each + 1));
    for i in 0..count {
        out.clear();
        splice_record(&mut out, &pieces, &parts, i);
        list.append(PyBytes::new(py, &out))?;
    }
    Ok(list)
}

/// Every record spliced (see `spliced_lengths`), written to the open file `fd` in pieces of about a
/// megabyte (the file's own buffer flushed first by the caller): no bytes object of the whole batch,
/// which with schemas is tens of megabytes. Returns the bytes written.
#[pyfunction]
fn write_spliced<'py>(py: Python<'py>, fd: i32, pieces: Vec<Bound<'py, PyBytes>>,
                      parts: Vec<Vec<Bound<'py, PyBytes>>>) -> PyResult<usize> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    const CHUNK: usize = 1 << 20;
    let (count, total) = spliced_lengths(&pieces, &parts)?;
    // The file belongs to the caller: borrowed here, never closed.
    let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let mut out = Vec::with_capacity(CHUNK + total / count.max(1) + 1);
    for i in 0..count {
        splice_record(&mut out, &pieces, &parts, i);
        if out.len() >= CHUNK || i + 1 == count {
            py.allow_threads(|| file.write_all(&out))?;
            out.clear();
        }
    }
    Ok(total)
}

mod binlog;

#[pymodule]
fn cdc_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RowCodec>()?;
    m.add_class::<binlog::BinlogRowCodec>()?;
    m.add_function(wrap_pyfunction!(splice, m)?)?;
    m.add_function(wrap_pyfunction!(splice_each, m)?)?;
    m.add_function(wrap_pyfunction!(write_spliced, m)?)?;
    m.add("Fallback", m.py().get_type::<Fallback>())?;
    Ok(())
}

#[cfg(test)]
mod tests;
