-- money.fraction.digits=1 with decimal.handling.mode=precise (the default): money values are Decimals of
-- scale 1, rounded HALF_UP (1234.56 -> 1234.6, -0.05 -> -0.1), in the snapshot and in the stream; a NOT NULL
-- money column a key-only old tuple leaves out is 0 at that scale.
-- @@property snapshot.mode=initial
-- @@property money.fraction.digits=1
CREATE TABLE cash (id int PRIMARY KEY, m money, mn money NOT NULL);
INSERT INTO cash VALUES (1, 1234.56, 0.05), (2, -0.05, -1234.55), (3, NULL, 0);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO cash VALUES (4, 92233720368547758.07, 0.04), (5, -92233720368547758.08, -0.06), (6, 12.25, 1);
UPDATE cash SET m = 0.15 WHERE id = 1;
DELETE FROM cash WHERE id = 2;
