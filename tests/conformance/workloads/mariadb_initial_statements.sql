-- database.initial.statements on MariaDB: run on the connector's query connections (the snapshot's), not
-- on the binlog reader's; ';;' is a semicolon inside a statement. The snapshot's SELECT (an override) reads
-- a user variable the statements set. A session time_zone they set does not shift TIMESTAMP values.
-- @@property snapshot.mode=initial
-- @@property database.initial.statements=SET @greeting = 'hello;;world'; SET time_zone = '+05:00'
-- @@property snapshot.select.statement.overrides=lab.t
-- @@property snapshot.select.statement.overrides.lab.t=SELECT id, @greeting AS v, ts, dt FROM lab.t
CREATE TABLE t (id int PRIMARY KEY, v varchar(40), ts timestamp NULL, dt datetime NULL);
INSERT INTO t VALUES (1, 'x', '2024-02-29 12:00:00', '2024-02-29 12:00:00');
-- @@CAPTURE
INSERT INTO t VALUES (2, 'y', '2024-03-01 00:30:00', '2024-03-01 00:30:00');
