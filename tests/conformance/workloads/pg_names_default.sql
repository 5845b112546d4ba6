-- Names Avro rejects at Debezium's defaults (schema.name.adjustment.mode and field.name.adjustment.mode
-- none): a table and columns whose names start with a digit or hold characters outside [A-Za-z0-9_].
-- @@property snapshot.mode=initial
CREATE TABLE "order-items" ("id" int PRIMARY KEY, "my-col" int, "1st" text, "Ünï" text, "a.b" int);
CREATE TABLE "2nd" ("id" int PRIMARY KEY);
INSERT INTO "order-items" VALUES (1, 2, 'x', 'y', 3);
INSERT INTO "2nd" VALUES (1);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO "order-items" VALUES (2, 3, 'z', 'w', 4);
