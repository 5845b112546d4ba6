-- The heartbeat topic under topic.heartbeat.prefix and topic.delimiter: <prefix>-<topic.prefix>.
-- topic.heartbeat.prefix wins over heartbeat.topics.prefix (Debezium 3 ignores the older option).
-- One heartbeat, in the middle: the interval passes once while the log is idle between the inserts.
-- @@property topic.delimiter=-
-- @@property heartbeat.interval.ms=8000
-- @@property topic.heartbeat.prefix=hb
-- @@property heartbeat.topics.prefix=legacy
CREATE TABLE t (id int PRIMARY KEY);
-- @@CAPTURE
INSERT INTO t VALUES (1);
-- @@SLEEP 9
INSERT INTO t VALUES (2);
-- @@SLEEP 1
