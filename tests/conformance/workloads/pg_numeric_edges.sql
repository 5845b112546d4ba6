-- PostgreSQL numbers at their edges: NaN and infinities, negative scales, the extremes of every
-- integer and float type, money, and numerics far beyond 64 bits.
CREATE TABLE nums (
  id        int PRIMARY KEY,
  n_free    numeric,
  n_10_2    numeric(10,2),
  n_5_neg   numeric(5,-2),
  n_38_0    numeric(38,0),
  n_big     numeric(60,30),
  i2        smallint,
  i4        integer,
  i8        bigint,
  f4        real,
  f8        double precision,
  m         money,
  ser       bigserial
);
-- @@CAPTURE
INSERT INTO nums (id, n_free, n_10_2, n_5_neg, n_38_0, n_big, i2, i4, i8, f4, f8, m) VALUES
  (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
  (2, 'NaN', 'NaN', 'NaN', 'NaN', 'NaN', 32767, 2147483647, 9223372036854775807, 'NaN', 'NaN', 92233720368547758.07),
  (3, 'Infinity', 99999999.99, 9999900, 99999999999999999999999999999999999999, 123456789012345678901234567890.123456789012345678901234567890, -32768, -2147483648, -9223372036854775808, 'Infinity', 'Infinity', -92233720368547758.08),
  (4, '-Infinity', -99999999.99, -1234500, -99999999999999999999999999999999999999, -0.000000000000000000000000000001, -1, -1, -1, '-Infinity', '-Infinity', -0.01),
  (5, 1e-40, 0.01, 150, 1, 1e29, 1, 1, 1, 1.17549435e-38, 2.2250738585072014e-308, 0.01),
  (6, -123456789012345678901234567890123456789.123456789, 1.5, -50, 18446744073709551616, 0.5, 2, 2, 2, 3.4028235e38, 1.7976931348623157e308, 1),
  (7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (8, 100, 100, 100, 100, 100, 100, 100, 100, '-0', '-0', 100);
-- @@STEP
UPDATE nums SET n_free = n_free * 2, f8 = f8 / 3 WHERE id IN (1, 5, 6, 8);
UPDATE nums SET n_free = 'NaN' WHERE id = 1;
DELETE FROM nums WHERE id IN (2, 3);
