-- Source types in the field schemas: column.propagate.source.type by column name and
-- datatype.propagate.source.type by type name (__debezium.source.column.type/length/scale/name), and a
-- column both masked and propagated (the first matching mapper wins).
-- @@property snapshot.mode=initial
-- @@property column.propagate.source.type=public\.typed\..*
-- @@property datatype.propagate.source.type=.+\.varchar,.+\.numeric,int4,text
-- @@property column.mask.with.4.chars=public\.typed\.masked
CREATE TYPE mood AS ENUM ('sad', 'happy');
CREATE DOMAIN shortstr AS varchar(10);
CREATE DOMAIN money2 AS numeric(6,2);
CREATE TABLE typed (id int PRIMARY KEY, v varchar(12), c char(3), t text, n numeric(10,3), n2 numeric,
  f float8, r real, b boolean, d date, ts timestamp(3), tz timestamptz, bi bigint, si smallint, by bytea,
  j jsonb, u uuid, a int[], masked varchar(9), e interval, mood mood, dom shortstr, dm money2, ti time(2), tt timetz, bt bit(3), vb varbit, va varchar[], nm name, x xml, m money);
CREATE TABLE other (id int PRIMARY KEY, v varchar(5), n numeric(4,1), t text, s smallint);
INSERT INTO typed VALUES (1, 'v', 'abc', 't', 1.5, 2, 1.25, 2.5, true, '2024-01-02', '2024-01-02 03:04:05.123',
  '2024-01-02 03:04:05+00', 7, 3, '\x01', '{}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1}', 'hidden', '1 day', 'sad', 'd', 1.5, '01:02:03', '01:02:03+00', '101', '1', '{a}', 'n', '<a/>', 1.5);
INSERT INTO other VALUES (1, 'x', 1.5, 't', 2);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO other VALUES (2, 'y', 2.5, 'u', 3);
