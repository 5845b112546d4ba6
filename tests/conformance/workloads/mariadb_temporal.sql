-- MariaDB dates and times at their edges: zero dates (allowed by an empty sql_mode), negative and
-- beyond-24-hour TIME, fractional seconds of every precision, YEAR 0 and its range, TIMESTAMP
-- at the epoch's ends. Session time zone +00:00.
CREATE TABLE times (
  id    int PRIMARY KEY,
  d     date,
  t0    time,
  t6    time(6),
  dt0   datetime,
  dt3   datetime(3),
  dt6   datetime(6),
  ts0   timestamp NULL,
  ts6   timestamp(6) NULL,
  y     year
);
-- @@CAPTURE
SET SESSION sql_mode = '';
INSERT INTO times VALUES
  (1, '0000-00-00', '00:00:00', '00:00:00.000000', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000000', 0),
  (2, '2024-00-10', '-00:00:01', '-838:59:59.000000', '2024-02-00 10:00:00', '2024-00-00 00:00:00.001', '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999', 1901),
  (3, '1000-01-01', '838:59:59', '838:59:59.000000', '1000-01-01 00:00:00', '1000-01-01 00:00:00.999', '1000-01-01 00:00:00.000001', '2000-02-29 12:00:00', '1999-12-31 23:59:59.5', 2155),
  (4, '9999-12-31', '-12:30:00', '24:00:00.000001', '9999-12-31 23:59:59', '2024-02-29 13:45:30.123', '2024-02-29 13:45:30.123456', NULL, NULL, 2000),
  (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (6, '1970-01-01', '100:00:00', '-00:00:00.000001', '1970-01-01 00:00:00', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999', '1970-01-01 00:00:01', '1970-01-01 00:00:01.000001', 70);
UPDATE times SET t0 = '-838:59:59', y = 1970 WHERE id = 1;
DELETE FROM times WHERE id = 2;
