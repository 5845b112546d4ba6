-- schema.include.list with table.exclude.list: a table is captured when its schema is included and the table
-- list lets it through (Debezium's Selectors: the schema filter AND the table filter), in the snapshot and in
-- the stream; tables of other schemas (public among them) are neither snapshotted nor streamed.
-- @@property snapshot.mode=initial
-- @@property schema.include.list=inv,h.*
-- @@property table.exclude.list=inv\.stock
CREATE SCHEMA inv;
CREATE SCHEMA hr;
CREATE SCHEMA other;
CREATE TABLE inv.items (id int PRIMARY KEY, name text);
CREATE TABLE inv.stock (id int PRIMARY KEY, qty int);
CREATE TABLE hr.people (id int PRIMARY KEY, name text);
CREATE TABLE other.things (id int PRIMARY KEY, name text);
CREATE TABLE public.plain (id int PRIMARY KEY, name text);
INSERT INTO inv.items VALUES (1, 'bolt'), (2, 'nut');
INSERT INTO inv.stock VALUES (1, 10);
INSERT INTO hr.people VALUES (1, 'ann');
INSERT INTO other.things VALUES (1, 'x');
INSERT INTO public.plain VALUES (1, 'p');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE other.wal_filler (id int);
-- @@STEP
INSERT INTO inv.items VALUES (3, 'washer');
INSERT INTO inv.stock VALUES (2, 20);
INSERT INTO hr.people VALUES (2, 'bob');
UPDATE hr.people SET name = 'ann b' WHERE id = 1;
INSERT INTO other.things VALUES (2, 'y');
INSERT INTO public.plain VALUES (2, 'q');
DELETE FROM inv.items WHERE id = 1;
