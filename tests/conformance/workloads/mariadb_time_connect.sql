-- time.precision.mode=connect: Kafka Connect's Time holds 00:00:00 to 23:59:59.999 only, so TIME
-- values outside it (negative, 24 hours and more; MariaDB's TIME spans -838:59:59..838:59:59)
-- are not written as numbers out of its range; read by the snapshot and from the binlog, with
-- DATE and DATETIME next to them (their years adjusted, the default).
-- @@property time.precision.mode=connect
-- @@property snapshot.mode=initial
CREATE TABLE clock (
  id   int PRIMARY KEY,
  t0   time,
  t3   time(3),
  t6   time(6),
  tn   time NOT NULL DEFAULT '00:00:00',
  d    date,
  dt6  datetime(6)
);
INSERT INTO clock VALUES
  (1, '00:00:00', '00:00:00.000', '00:00:00.000000', '00:00:00', '2024-01-01', '2024-01-01 00:00:00.123456'),
  (2, '23:59:59', '23:59:59.999', '23:59:59.999999', '23:59:59', '0050-01-01', '0050-01-01 10:00:00.5'),
  (3, '24:00:00', '24:00:00.000', '24:00:00.000001', '24:00:00', NULL, NULL),
  (4, '-00:00:01', '-00:00:00.001', '-00:00:00.000001', '-00:00:01', NULL, NULL),
  (5, '838:59:59', '838:59:59.999', '-838:59:59.000000', '-838:59:59', NULL, NULL),
  (6, NULL, NULL, NULL, '12:34:56', NULL, NULL);
-- @@CAPTURE
INSERT INTO clock VALUES
  (11, '00:00:00', '00:00:00.000', '00:00:00.000000', '00:00:00', '2024-01-01', '2024-01-01 00:00:00.123456'),
  (12, '23:59:59', '23:59:59.999', '23:59:59.999999', '23:59:59', '0050-01-01', '0050-01-01 10:00:00.5'),
  (13, '24:00:00', '24:00:00.000', '24:00:00.000001', '24:00:00', NULL, NULL),
  (14, '-00:00:01', '-00:00:00.001', '-00:00:00.000001', '-00:00:01', NULL, NULL),
  (15, '838:59:59', '838:59:59.999', '-838:59:59.000000', '-838:59:59', NULL, NULL),
  (16, NULL, NULL, NULL, '12:34:56', NULL, NULL);
UPDATE clock SET t0 = '100:00:00', tn = '-01:00:00' WHERE id = 11;
UPDATE clock SET t0 = '01:00:00', tn = '02:00:00' WHERE id = 13;
DELETE FROM clock WHERE id = 15;
