-- money.fraction.digits=4 with decimal.handling.mode=string: each value as the server prints it, not
-- rescaled (1234.56), in the snapshot and in the stream; but a NOT NULL money column a key-only old tuple
-- leaves out is 0 at the scale of money.fraction.digits (0.0000).
-- @@property snapshot.mode=initial
-- @@property money.fraction.digits=4
-- @@property decimal.handling.mode=string
CREATE TABLE cash (id int PRIMARY KEY, m money, mn money NOT NULL);
INSERT INTO cash VALUES (1, 1234.56, 0.05), (2, -0.05, -1234.55), (3, NULL, 0);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO cash VALUES (4, 92233720368547758.07, 0.04), (5, -92233720368547758.08, -0.06), (6, 12.25, 1);
UPDATE cash SET m = 0.15 WHERE id = 1;
DELETE FROM cash WHERE id = 2;
