-- Names Avro rejects: field.name.adjustment.mode=avro and schema.name.adjustment.mode=avro on a table and
-- columns whose names start with a digit or hold characters outside [A-Za-z0-9_].
-- @@property snapshot.mode=initial
-- @@property field.name.adjustment.mode=avro
-- @@property schema.name.adjustment.mode=avro
CREATE TABLE "order-items" ("id" int PRIMARY KEY, "my-col" int, "1st" text, "Ünï" text, "a.b" int, "ok_name" int);
INSERT INTO "order-items" VALUES (1, 2, 'x', 'y', 3, 4);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO "order-items" VALUES (2, 3, 'z', 'w', 4, 5);
UPDATE "order-items" SET "my-col" = 9 WHERE id = 2;
