-- notification.enabled.channels=sink: Debezium's notification records for the initial snapshot (started,
-- each table's scan, completed) on notification.sink.topic.name.
-- @@property snapshot.mode=initial
-- @@property notification.enabled.channels=sink
-- @@property notification.sink.topic.name=dbz_notifications
-- @@property table.include.list=public.a,public.b
CREATE TABLE a (id int PRIMARY KEY);
CREATE TABLE b (id int PRIMARY KEY);
INSERT INTO a VALUES (1), (2);
INSERT INTO b VALUES (1);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO a VALUES (3);
