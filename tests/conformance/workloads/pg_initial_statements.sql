-- database.initial.statements on PostgreSQL: run on the connector's query connections (the snapshot's), not
-- on the replication connection; ';;' is a semicolon inside a statement. The snapshot's SELECT (an override)
-- reads a setting the statements made. A session TimeZone or DateStyle they set does not change values.
-- @@property snapshot.mode=initial
-- @@property database.initial.statements=SET cdc.greeting = 'hello;;world'; SET TIME ZONE 'Asia/Kolkata'
-- @@property snapshot.select.statement.overrides=public.t
-- @@property snapshot.select.statement.overrides.public.t=SELECT id, current_setting('cdc.greeting') AS v, d, ts, tz, tt FROM public.t
CREATE TABLE t (id int PRIMARY KEY, v text, d date, ts timestamp, tz timestamptz, tt timetz);
INSERT INTO t VALUES (1, 'x', '2024-02-29', '2024-02-29 12:00:00', '2024-02-29 12:00:00+00', '12:00:00+02');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO t VALUES (2, 'y', '2024-03-01', '2024-03-01 00:30:00', '2024-03-01 00:30:00+00', '00:30:00-03');
