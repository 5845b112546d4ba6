-- An incremental snapshot (execute-snapshot through the signal table) with notification.enabled.channels=sink:
-- its rows (snapshot "incremental") in chunks of incremental.snapshot.chunk.size, and Debezium's
-- notification records of it (STARTED, IN_PROGRESS per chunk, TABLE_SCAN_COMPLETED, COMPLETED).
-- @@property signal.data.collection=public.debezium_signal
-- @@property incremental.snapshot.chunk.size=2
-- @@property notification.enabled.channels=sink
-- @@property notification.sink.topic.name=dbz_notifications
-- @@property table.include.list=public.t,public.debezium_signal
CREATE TABLE debezium_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048));
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');
-- @@CAPTURE
INSERT INTO debezium_signal VALUES ('sig-1', 'execute-snapshot', '{"data-collections": ["public.t"], "type": "incremental"}');
-- @@SLEEP 3
-- @@STEP
INSERT INTO t VALUES (4, 'd');
