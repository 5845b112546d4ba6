//! The pgoutput/COPY codec's pure parts, without a Python interpreter: each kind's writer on the
//! texts the server sends, against the bytes the Python path writes for them (the converters of
//! cdc/sources/postgres/types.py, then orjson), which for the values of Debezium's recorded output
//! (tests/fixtures/reference/debezium/pg-types.jsonl, marked "Debezium") are its values too; the
//! texts a kind does not take (left to the column's Python converter); the row around the values,
//! NULLs, the key struct, TupleData and COPY lines.
//!
//! The Python path stays the reference for everything that needs an interpreter (RowCodec.new, the
//! `python` kind, key dicts): tests/unit/test_native_codec.py and test_native_rows.py.

use super::*;

/// What `write_text` appends for `text` in `kind`, or None when the kind does not take that text.
fn json_of(kind: Kind, text: &[u8]) -> Option<String> {
    let mut out = b"[".to_vec(); // writers append: what is before stays
    write_text(&mut out, kind, text)?;
    assert_eq!(out[0], b'[');
    Some(String::from_utf8(out[1..].to_vec()).expect("JSON is UTF-8"))
}

fn check(kind: Kind, cases: &[(&str, &str)]) {
    for (text, expected) in cases {
        assert_eq!(json_of(kind, text.as_bytes()).as_deref(), Some(*expected), "{kind:?} of {text:?}");
    }
}

fn refused(kind: Kind, texts: &[&str]) {
    for text in texts {
        assert_eq!(json_of(kind, text.as_bytes()), None, "{kind:?} took {text:?}");
    }
}

// ---- kinds ------------------------------------------------------------------------------------

#[test]
fn kinds_as_native_rows_names_them() {
    let cases = [
        ("int", Kind::Int), ("int2", Kind::Int), ("int4", Kind::Int), ("int8", Kind::Int), ("bool", Kind::Bool),
        ("text", Kind::Text), ("float4", Kind::Float4), ("float8", Kind::Float8), ("decimal:0", Kind::Decimal(0)),
        ("decimal:2", Kind::Decimal(2)), ("vdecimal", Kind::VariableDecimal), ("date", Kind::Date),
        ("time:ms", Kind::Time(Unit::Milli)), ("time:us", Kind::Time(Unit::Micro)), ("time:ns", Kind::Time(Unit::Nano)),
        ("timestamp:ms", Kind::Timestamp(Unit::Milli)), ("timestamp:us", Kind::Timestamp(Unit::Micro)),
        ("timestamp:ns", Kind::Timestamp(Unit::Nano)), ("tstz:0", Kind::ZonedTimestamp(0)),
        ("tstz:6", Kind::ZonedTimestamp(6)), ("bytea", Kind::Bytea(Binary::Base64)),
        ("bytea:base64", Kind::Bytea(Binary::Base64)), ("bytea:url", Kind::Bytea(Binary::Base64Url)),
        ("bytea:hex", Kind::Bytea(Binary::Hex)), ("python", Kind::Python), ("python:bytes", Kind::PythonBytes),
    ];
    for (name, kind) in cases {
        assert_eq!(kind_of(name).ok(), Some(kind), "{name}");
    }
    for name in ["", "numeric", "int:", "tstz:7", "tstz:-1", "decimal:x", "decimal:", "time:s", "timestamp:",
                 "bytea:raw", "array", "interval", "Int"] {
        assert!(kind_of(name).is_err(), "{name:?} taken");
    }
}

#[test]
fn the_python_kind_is_never_written_here() {
    // arrays, intervals, money, bits, timetz...: their converter and orjson, in the same call
    refused(Kind::Python, &["{1,2,3}", "1 day", "", "t"]);
    refused(Kind::PythonBytes, &["\x00\x7f", "", "1"]);
}

// ---- MySQL's text protocol --------------------------------------------------------------------

#[test]
fn text_protocol_rows_as_their_values() {
    // 1-byte lengths, NULL (0xFB), an empty string, then 2-, 3- and 8-byte lengths
    let mut packet = vec![2, b'4', b'2', 0xfb, 0];
    let long = vec![b'x'; 300];
    packet.extend_from_slice(&[0xfc, 0x2c, 0x01]);
    packet.extend_from_slice(&long);
    let longer = vec![b'y'; 70_000];
    packet.extend_from_slice(&[0xfd, 0x70, 0x11, 0x01]);
    packet.extend_from_slice(&longer);
    packet.extend_from_slice(&[0xfe, 1, 0, 0, 0, 0, 0, 0, 0, b'z']);
    let values = text_protocol_values(&packet).expect("a well-formed row");
    assert_eq!(values, vec![Some(&b"42"[..]), None, Some(&b""[..]), Some(&long[..]), Some(&longer[..]),
                            Some(&b"z"[..])]);
    assert_eq!(text_protocol_values(&[]), Some(vec![]));
}

#[test]
fn malformed_text_protocol_rows_are_refused() {
    for packet in [&[5u8, b'a'][..], &[0xfc, 1][..], &[0xfe, 1, 0, 0][..], &[0xff, 0][..], &[1, b'a', 0xfd][..]] {
        assert_eq!(text_protocol_values(packet), None, "{packet:?}");
    }
}

// ---- integers and booleans --------------------------------------------------------------------

#[test]
fn integers_are_their_canonical_text() {
    check(Kind::Int, &[
        ("0", "0"), ("7", "7"), ("-1", "-1"), ("32767", "32767"), ("-32768", "-32768"),
        ("2147483647", "2147483647"), ("-2147483648", "-2147483648"),        // Debezium
        ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "-9223372036854775808"),
    ]);
    // not what int() then orjson would print back: Python decides
    refused(Kind::Int, &["", "-", "007", "-0", "+1", " 1", "1 ", "1.0", "1e3", "0x1", "12345678901234567890"]);
}

#[test]
fn integers_written_from_values() {
    for (value, text) in [(0i64, "0"), (-1, "-1"), (10, "10"), (19782, "19782"), (i64::MAX, "9223372036854775807"),
                          (i64::MIN, "-9223372036854775808")] {
        let mut out = Vec::new();
        write_i64(&mut out, value);
        assert_eq!(out, text.as_bytes());
    }
}

#[test]
fn booleans() {
    check(Kind::Bool, &[("t", "true"), ("f", "false")]);
    refused(Kind::Bool, &["", "true", "1", "T", "tt"]);
}

// ---- strings ----------------------------------------------------------------------------------

#[test]
fn strings_escaped_as_orjson_escapes_them() {
    let controls: String = (0u8..0x20).map(char::from).collect();
    check(Kind::Text, &[
        (&controls, r#""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f""#),
        ("héllo \"quoted\"", r#""héllo \"quoted\"""#),                   // Debezium
        ("multi\nline text", r#""multi\nline text""#),                     // Debezium
        ("", r#""""#),
        ("\x7f\"\\/", "\"\x7f\\\"\\\\/\""),                                 // DEL and / as they are
        ("\u{2028}\u{1f422} żółw", "\"\u{2028}\u{1f422} żółw\""),           // non-ASCII as its UTF-8
        ("{\"a\": 1, \"b\": [1, 2]}", r#""{\"a\": 1, \"b\": [1, 2]}""#),  // json: the server's text
    ]);
    assert_eq!(json_of(Kind::Text, b"ok \xff"), None, "text that is not UTF-8 is for Python");
}

// ---- floats -----------------------------------------------------------------------------------

#[test]
fn float8_as_orjson_prints_float_of_the_text() {
    check(Kind::Float8, &[
        ("2.718281828459045", "2.718281828459045"),   // Debezium
        ("-1e+308", "-1e+308"), ("1e16", "1e+16"), ("1e15", "1000000000000000.0"),
        ("9999999999999998", "9999999999999998.0"), ("0.00001", "0.00001"), ("1e-05", "0.00001"),
        ("0.000001", "1e-6"), ("-0", "-0.0"), ("0", "0.0"), ("100", "100.0"), ("0.1", "0.1"),
        ("123.456", "123.456"), ("1.5e-10", "1.5e-10"), ("5e-324", "5e-324"),
        ("1.7976931348623157e+308", "1.7976931348623157e+308"),
        ("NaN", r#""NaN""#), ("Infinity", r#""Infinity""#), ("-Infinity", r#""-Infinity""#),  // Debezium (Jackson)
    ]);
    refused(Kind::Float8, &["", "inf", "nan", "infinity", "1e999", "1,5", "0x10", " 1"]);
}

#[test]
fn float4_as_javas_float_to_string() {
    check(Kind::Float4, &[
        ("3.14", "3.14"), ("-1.5e-10", "-1.5e-10"),   // Debezium
        ("0.1", "0.1"), ("0.3", "0.3"), ("16777217", "16777216.0"), ("-0", "-0.0"),
        ("1e-45", "1.4e-45"), ("1.4e-45", "1.4e-45"), ("1e-40", "1e-40"), ("1.17549435e-38", "1.1754944e-38"),
        ("3.4028235e+38", "3.4028235e+38"), ("3.5e38", r#""Infinity""#), ("-3.5e38", r#""-Infinity""#),
        ("NaN", r#""NaN""#), ("Infinity", r#""Infinity""#), ("-Infinity", r#""-Infinity""#),
    ]);
    refused(Kind::Float4, &["", "inf", "nan", "1,5"]);
}

// ---- numerics ---------------------------------------------------------------------------------

#[test]
fn numeric_with_a_scale_as_connects_decimal() {
    check(Kind::Decimal(2), &[
        ("12345678.90", r#""SZYC0g==""#), ("-0.01", r#""/w==""#), ("1.50", r#""AJY=""#),   // Debezium
        ("0.00", r#""AA==""#), ("1.27", r#""fw==""#), ("1.28", r#""AIA=""#), ("-1.28", r#""gA==""#),
        ("-1.29", r#""/38=""#), ("327.67", r#""f/8=""#), ("-327.68", r#""gAA=""#),
        ("92233720368547758.07", r#""f/////////8=""#),
    ]);
    check(Kind::Decimal(0), &[
        ("0", r#""AA==""#), ("127", r#""fw==""#), ("128", r#""AIA=""#), ("-128", r#""gA==""#), ("-129", r#""/38=""#),
        ("255", r#""AP8=""#), ("256", r#""AQA=""#),
        ("170141183460469231731687303715884105727", r#""f////////////////////w==""#),   // i128::MAX
        ("-170141183460469231731687303715884105728", r#""gAAAAAAAAAAAAAAAAAAAAA==""#),  // i128::MIN
    ]);
    // another scale than the column's, the special values (Python writes null) and past 127 bits
    refused(Kind::Decimal(2), &["NaN", "Infinity", "-Infinity", "1.5", "15", "1.500", "", "-", ".50", "1e5",
                                "1.5O", &format!("{}.00", "9".repeat(40))]);
    refused(Kind::Decimal(0), &["1.", "1.0", "170141183460469231731687303715884105728"]);
}

#[test]
fn numeric_without_a_scale_as_variable_scale_decimal() {
    check(Kind::VariableDecimal, &[
        ("3.14159265358979323846264338327950288", r#"{"scale":35,"value":"PIE/ZjbZhPJZW2o3KlPQ"}"#),   // Debezium
        ("-123456789012345678901234567890.123456789", r#"{"scale":9,"value":"ox8WWp/qATpVIFzXUcZ+6w=="}"#),
        ("1.500", r#"{"scale":1,"value":"Dw=="}"#), ("0", r#"{"scale":0,"value":"AA=="}"#),
        ("-0.00", r#"{"scale":0,"value":"AA=="}"#), ("100", r#"{"scale":0,"value":"ZA=="}"#),
        ("-0.5", r#"{"scale":1,"value":"+w=="}"#),
    ]);
    refused(Kind::VariableDecimal, &["NaN", "Infinity", "-Infinity", "", "1e5", &"9".repeat(40)]);
}

// ---- dates and times --------------------------------------------------------------------------

#[test]
fn dates_as_epoch_days() {
    check(Kind::Date, &[
        ("2024-02-29", "19782"), ("1970-01-01", "0"),   // Debezium
        ("1969-12-31", "-1"), ("0001-01-01", "-719162"), ("1000-01-01", "-354285"), ("9999-12-31", "2932896"),
    ]);
    // infinity, BC and five-digit years have their own values in Python; invalid dates are not sent
    refused(Kind::Date, &["infinity", "-infinity", "2024-02-29 BC", "10000-01-01", "0000-01-01", "2023-02-29",
                          "1900-02-29", "2024-13-01", "2024-04-31", "2024-2-29", "2024/02/29", ""]);
}

#[test]
fn times_in_each_unit() {
    check(Kind::Time(Unit::Micro), &[
        ("13:45:30.123456", "49530123456"), ("00:00:00", "0"),   // Debezium
        ("24:00:00", "86400000000"), ("23:59:59.999999", "86399999999"), ("13:45:30.5", "49530500000"),
    ]);
    check(Kind::Time(Unit::Milli), &[("13:45:30.123", "49530123"), ("00:00:00.999", "999"), ("24:00:00", "86400000")]);
    check(Kind::Time(Unit::Nano), &[("13:45:30.123456", "49530123456000"), ("24:00:00", "86400000000000")]);
    refused(Kind::Time(Unit::Micro), &["24:00:00.000001", "24:00:01", "25:00:00", "13:60:00", "13:45:60", "13:45",
                                       "13:45:30.1234567", "13:45:30,5", "13:45:30.", "13:45:30+00"]);
}

#[test]
fn timestamps_in_each_unit() {
    check(Kind::Timestamp(Unit::Micro), &[
        ("2024-02-29 13:45:30.123456", "1709214330123456"), ("1970-01-01 00:00:00", "0"),   // Debezium
        ("1969-12-31 23:59:59.999999", "-1"), ("0001-01-01 00:00:00", "-62135596800000000"),
        ("9999-12-31 23:59:59.999999", "253402300799999999"),
    ]);
    check(Kind::Timestamp(Unit::Milli), &[
        ("2024-02-29 13:45:30.123", "1709214330123"), ("1969-12-31 23:59:59.999", "-1"),
        ("1969-12-31 23:59:59.9995", "-1"),   // floored, as Python's //
    ]);
    check(Kind::Timestamp(Unit::Nano), &[
        ("2024-02-29 13:45:30.123456", "1709214330123456000"),
        ("2262-04-11 23:47:16.854775", "9223372036854775000"), ("2262-04-11 23:47:16.854776", "null"),
        ("1677-09-21 00:12:43.145225", "-9223372036854775000"), ("1677-09-21 00:12:43.145224", "null"),
    ]);
    // infinity (pgjdbc's instants), BC, five-digit years: Python
    refused(Kind::Timestamp(Unit::Micro), &["infinity", "-infinity", "0044-03-15 12:00:00 BC",
                                            "10000-01-01 00:00:00", "2024-02-29T13:45:30", "2024-02-29 13:45:30+00",
                                            "2024-02-29 24:00:00", "2024-02-29"]);
}

#[test]
fn timestamptz_as_zoned_timestamp_in_utc() {
    check(Kind::ZonedTimestamp(6), &[
        ("2024-02-29 11:45:30.123456+00", r#""2024-02-29T11:45:30.123456Z""#),   // Debezium
        ("1970-01-01 00:00:00+00", r#""1970-01-01T00:00:00.000000Z""#),          // Debezium
        ("9999-12-31 23:59:59.999999+00", r#""9999-12-31T23:59:59.999999Z""#),   // Debezium
        ("2024-02-29 11:45:30.5+00", r#""2024-02-29T11:45:30.500000Z""#),
        ("0001-01-01 00:00:00+00", r#""0001-01-01T00:00:00.000000Z""#),
    ]);
    check(Kind::ZonedTimestamp(0), &[
        ("2024-02-29 11:45:30+00", r#""2024-02-29T11:45:30Z""#), ("2024-02-29 11:45:30.5+00", r#""2024-02-29T11:45:30.5Z""#),
        ("2024-02-29 11:45:30.120+00", r#""2024-02-29T11:45:30.12Z""#),
    ]);
    check(Kind::ZonedTimestamp(3), &[
        ("2024-02-29 11:45:30.123+00", r#""2024-02-29T11:45:30.123Z""#), ("2024-02-29 11:45:30+00", r#""2024-02-29T11:45:30.000Z""#),
        ("2024-02-29 11:45:30.1+00", r#""2024-02-29T11:45:30.100Z""#),
    ]);
    // another offset than the connection's UTC, infinity, BC, five-digit years: Python
    refused(Kind::ZonedTimestamp(6), &["2024-02-29 13:45:30.123456+02", "2024-02-29 11:45:30+00:30", "infinity",
                                       "-infinity", "0044-03-15 12:00:00+00 BC", "10000-01-01 00:00:00+00",
                                       "2024-02-29 11:45:30"]);
}

#[test]
fn civil_dates_both_ways() {
    for (year, month, day, days) in [(1970, 1, 1, 0), (2024, 2, 29, 19782), (1, 1, 1, -719_162), (0, 3, 1, -719_468),
                                     (9999, 12, 31, 2_932_896), (1969, 12, 31, -1)] {
        assert_eq!(days_from_civil(year, month, day), days);
        assert_eq!(civil_from_days(days), (year, month, day));
    }
    for days in (-800_000..3_000_000).step_by(97) {
        let (year, month, day) = civil_from_days(days);
        assert!((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month), "{days}");
        assert_eq!(days_from_civil(year, month, day), days);
    }
    assert_eq!([days_in_month(1900, 2), days_in_month(2000, 2), days_in_month(2023, 2), days_in_month(2024, 2)],
               [28, 29, 28, 29]);
}

// ---- bytea ------------------------------------------------------------------------------------

#[test]
fn bytea_in_each_binary_handling_mode() {
    check(Kind::Bytea(Binary::Base64), &[
        ("\\xdeadbeef00", r#""3q2+7wA=""#), ("\\x", r#""""#),   // Debezium
        ("\\xfbff", r#""+/8=""#), ("\\xFBFF", r#""+/8=""#), ("\\x66", r#""Zg==""#), ("\\x666f", r#""Zm8=""#),
        ("\\x666f6f", r#""Zm9v""#),
    ]);
    check(Kind::Bytea(Binary::Base64Url), &[("\\xfbff", r#""-_8=""#), ("\\xdeadbeef00", r#""3q2-7wA=""#)]);
    check(Kind::Bytea(Binary::Hex), &[("\\xDEADbeef00", r#""deadbeef00""#), ("\\x", r#""""#)]);
    for mode in [Binary::Base64, Binary::Base64Url, Binary::Hex] {
        // the escape form (another bytea_output), odd or bad hex: Python
        refused(Kind::Bytea(mode), &["abc", "\\000", "\\x0", "\\xzz", "\\x0g", "x00", ""]);
    }
}

#[test]
fn base64_as_rfc_4648() {
    for (bytes, text) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                          ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")] {
        let mut out = Vec::new();
        write_base64(&mut out, bytes.as_bytes());
        assert_eq!(out, text.as_bytes());
    }
}

// ---- rows -------------------------------------------------------------------------------------

/// A codec of these columns, each at its own tuple index, without Python converters.
fn codec(columns: &[(&str, Kind)], key_fields: &[usize]) -> RowCodec {
    let columns = columns
        .iter()
        .enumerate()
        .map(|(index, &(name, kind))| {
            let mut name_json = Vec::new();
            write_string(&mut name_json, name.as_bytes());
            let mut prefix = vec![if index == 0 { b'{' } else { b',' }];
            prefix.extend_from_slice(&name_json);
            prefix.push(b':');
            Column { index, kind, prefix, name: name_json, convert: None }
        })
        .collect::<Vec<_>>();
    let width = columns.len();
    RowCodec { columns, width: Some(width), min_width: width, keys: Vec::new(), key_spec: None,
               key_fields: key_fields.to_vec(), dumps: None }
}

/// The row struct's JSON of these values and their spans, as `write_fields` lays it out with the
/// native writers only.
fn row(codec: &RowCodec, values: &[Option<&[u8]>]) -> Option<(String, Vec<(usize, usize)>)> {
    let (mut out, mut spans) = (Vec::new(), Vec::new());
    codec
        .lay_out(values, &mut out, &mut spans, |out, column, text| {
            write_text(out, column.kind, text).ok_or_else(|| fallback("not native"))
        })
        .ok()?;
    Some((String::from_utf8(out).unwrap(), spans))
}

fn texts<'a>(values: &[Option<&'a str>]) -> Vec<Option<&'a [u8]>> {
    values.iter().map(|v| v.map(str::as_bytes)).collect()
}

#[test]
fn a_row_of_debeziums_reference_table() {
    let c = codec(&[("id", Kind::Int), ("c_bool", Kind::Bool), ("c_numeric", Kind::Decimal(2)),
                    ("c_numeric_u", Kind::VariableDecimal), ("c_varchar", Kind::Text), ("c_bytea", Kind::Bytea(Binary::Base64)),
                    ("c_date", Kind::Date), ("c_time", Kind::Time(Unit::Micro)), ("c_timestamp", Kind::Timestamp(Unit::Micro)),
                    ("c_timestamptz", Kind::ZonedTimestamp(6)), ("c_float8", Kind::Float8)], &[0]);
    let values = texts(&[Some("1"), Some("t"), Some("12345678.90"), Some("3.14159265358979323846264338327950288"),
                         Some("héllo \"quoted\""), Some("\\xdeadbeef00"), Some("2024-02-29"), Some("13:45:30.123456"),
                         Some("2024-02-29 13:45:30.123456"), Some("2024-02-29 11:45:30.123456+00"),
                         Some("2.718281828459045")]);
    let (json, spans) = row(&c, &values).unwrap();
    assert_eq!(json, concat!(r#"{"id":1,"c_bool":true,"c_numeric":"SZYC0g==","#,
                             r#""c_numeric_u":{"scale":35,"value":"PIE/ZjbZhPJZW2o3KlPQ"},"c_varchar":"héllo \"quoted\"","#,
                             r#""c_bytea":"3q2+7wA=","c_date":19782,"c_time":49530123456,"c_timestamp":1709214330123456,"#,
                             r#""c_timestamptz":"2024-02-29T11:45:30.123456Z","c_float8":2.718281828459045}"#));
    assert_eq!(spans.len(), 11);
    assert_eq!(&json.as_bytes()[spans[2].0..spans[2].1], br#""SZYC0g==""#);
    let mut key = Vec::new();
    c.write_key(json.as_bytes(), &spans, &mut key);
    assert_eq!(key, br#"{"id":1}"#);
}

#[test]
fn nulls_in_every_kind() {
    let kinds = [Kind::Int, Kind::Bool, Kind::Text, Kind::Float4, Kind::Float8, Kind::Decimal(2), Kind::VariableDecimal,
                 Kind::Date, Kind::Time(Unit::Micro), Kind::Timestamp(Unit::Milli), Kind::ZonedTimestamp(6),
                 Kind::Bytea(Binary::Hex), Kind::Python];
    let names: Vec<String> = (0..kinds.len()).map(|i| format!("c{i}")).collect();
    let columns: Vec<(&str, Kind)> = names.iter().map(String::as_str).zip(kinds).collect();
    let (json, spans) = row(&codec(&columns, &[]), &vec![None; kinds.len()]).unwrap();
    let expected: Vec<String> = names.iter().map(|n| format!("\"{n}\":null")).collect();
    assert_eq!(json, format!("{{{}}}", expected.join(",")));
    assert!(spans.iter().all(|&(start, end)| &json.as_bytes()[start..end] == b"null"));
}

#[test]
fn a_row_without_columns_and_keys_in_their_order() {
    assert_eq!(row(&codec(&[], &[]), &[]).unwrap().0, "{}");
    let c = codec(&[("a", Kind::Int), ("b", Kind::Text), ("c", Kind::Date)], &[2, 0]);
    let (json, spans) = row(&c, &texts(&[Some("-5"), Some("x\ty"), None])).unwrap();
    assert_eq!(json, r#"{"a":-5,"b":"x\ty","c":null}"#);
    let mut key = Vec::new();
    c.write_key(json.as_bytes(), &spans, &mut key);
    assert_eq!(key, br#"{"c":null,"a":-5}"#);
    // one value its kind does not take fails the row here (in RowCodec: its converter, or Fallback)
    assert!(row(&c, &texts(&[Some("007"), Some(""), None])).is_none());
}

// ---- TupleData and COPY -----------------------------------------------------------------------

fn tuple_data(values: &[Option<&str>]) -> Vec<u8> {
    let mut out = (values.len() as u16).to_be_bytes().to_vec();
    for value in values {
        match value {
            None => out.push(b'n'),
            Some(text) => {
                out.push(b't');
                out.extend_from_slice(&(text.len() as i32).to_be_bytes());
                out.extend_from_slice(text.as_bytes());
            }
        }
    }
    out
}

#[test]
fn tuple_data_read_from_its_position() {
    let c = codec(&[("a", Kind::Int), ("b", Kind::Text), ("c", Kind::Text)], &[]);
    let mut data = b"I\x00\x00\x40\x01N".to_vec(); // a message's header before the tuple
    data.extend(tuple_data(&[Some("42"), None, Some("")]));
    let (values, end) = c.tuple_values(&data, 6).ok().unwrap();
    assert_eq!(values, texts(&[Some("42"), None, Some("")]));
    assert_eq!(end, data.len());
    assert_eq!(row(&c, &values).unwrap().0, r#"{"a":42,"b":null,"c":""}"#);
}

#[test]
fn tuple_data_this_codec_does_not_read() {
    let c = codec(&[("a", Kind::Int), ("b", Kind::Text)], &[]);
    let good = tuple_data(&[Some("1"), Some("x")]);
    assert!(c.tuple_values(&good, 0).is_ok());
    let mut toast = tuple_data(&[Some("1")]);
    toast[1] = 2;
    toast.push(b'u'); // an unchanged TOAST value
    let mut binary = good.clone();
    binary[2] = b'b';
    let mut unknown = good.clone();
    unknown[2] = b'x';
    for data in [tuple_data(&[Some("1")]), tuple_data(&[Some("1"), Some("x"), None]), toast, binary, unknown,
                 good[..good.len() - 1].to_vec(), good[..4].to_vec(), vec![0]] {
        assert!(c.tuple_values(&data, 0).is_err(), "{data:?}");
    }
}

#[test]
fn copy_lines_split_and_unescaped() {
    let line = b"1\t\\N\tab\\tc\\\\d\\n\t\tN";
    let fields = split_copy(line);
    assert_eq!(copy_values(&fields), vec![Some(&b"1"[..]), None, Some(b"ab\tc\\d\n"), Some(b""), Some(b"N")]);
    assert_eq!(unescape_copy(b"\\b\\f\\n\\r\\t\\v\\x\\\\\\"), b"\x08\x0c\n\r\t\x0bx\\\\");
    assert_eq!(copy_values(&split_copy(b"")), vec![Some(&b""[..])]);
}

#[test]
fn copy_line_widths() {
    let c = codec(&[("a", Kind::Int), ("b", Kind::Text)], &[]);
    assert!(c.check_width(2).is_ok());
    assert!(c.check_width(1).is_err() && c.check_width(3).is_err());
}
