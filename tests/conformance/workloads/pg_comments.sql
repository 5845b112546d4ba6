-- include.schema.comments=true on PostgreSQL: Debezium 3.6.1 puts no table or column comment in its events
-- (no doc in the schemas), in the snapshot or the stream.
-- @@property include.schema.comments=true
-- @@property snapshot.mode=initial
CREATE TABLE c (id int PRIMARY KEY, a text, b int);
COMMENT ON TABLE c IS 'table c';
COMMENT ON COLUMN c.id IS 'the key';
COMMENT ON COLUMN c.a IS 'a''s comment';
INSERT INTO c VALUES (0, 's', 1);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO c VALUES (1, 'x', 2);
