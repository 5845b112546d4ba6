-- PostgreSQL dates and times at their edges: infinities, BC dates, the largest timestamps,
-- intervals beyond the 64-bit microsecond range, 24:00, time zones far from UTC.
SET timezone = 'UTC';
CREATE TABLE times (
  id      int PRIMARY KEY,
  d       date,
  t       time,
  t3      time(3),
  tz      timetz,
  ts      timestamp,
  ts0     timestamp(0),
  ts3     timestamp(3),
  tstz    timestamptz,
  iv      interval,
  iv_ym   interval year to month
);
-- @@CAPTURE
SET timezone = 'UTC';
INSERT INTO times VALUES
  (1, '2024-02-29', '00:00:00', '23:59:59.999', '00:00:00+00', '2024-02-29 00:00:00', '2024-02-29 12:34:56', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+00', '0', '0'),
  (2, 'infinity', '24:00:00', '12:00:00.5', '24:00:00-15:59', 'infinity', 'infinity', 'infinity', 'infinity', '100 years', '100 years 11 months'),
  (3, '-infinity', '23:59:59.999999', '00:00:00.001', '23:59:59.999999+15:59', '-infinity', '-infinity', '-infinity', '-infinity', '-100 years', '-3 months'),
  (4, '0001-01-01 BC', '12:00:00', '12:00:00', '12:00:00+05:30', '4713-01-01 00:00:00 BC', '0001-01-01 00:00:00', '1000-01-01 00:00:00.123', '0001-01-01 00:00:00+00', '1 day -1 microsecond', '1 year'),
  (5, '4713-01-01 BC', '00:00:00.000001', '00:00:00', '00:00:00-08', '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59', '294276-12-31 23:59:59.999', '294276-12-31 23:59:59.999999+00', '178000000 years', '-178000000 years'),
  (6, '5874897-12-31', '13:14:15.161718', '13:14:15.161', '13:14:15.161718+01', '1969-12-31 23:59:59.999999', '1970-01-01 00:00:00', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999-03', '-178000000 years', '0 months'),
  (7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (8, '1582-10-04', '01:02:03', '01:02:03.004', '01:02:03.000004-01', '1582-10-15 01:02:03', '1900-01-01 00:00:00', '1899-12-31 23:59:59.999', '1900-01-01 00:00:00+01', '1 mon 2 days 03:04:05.000006', '1 month');
-- @@STEP
SET timezone = 'UTC';
UPDATE times SET iv = '2 days', ts = ts + interval '1 second' WHERE id IN (1, 8);
DELETE FROM times WHERE id = 5;
