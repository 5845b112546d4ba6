-- Truncates (emitted once skipped.operations no longer lists t) of one and of two tables, and
-- logical decoding messages, transactional and not, with text and binary content.
-- @@property skipped.operations=none
CREATE TABLE t1 (id int PRIMARY KEY, v text);
CREATE TABLE t2 (id int PRIMARY KEY, v text);
-- @@CAPTURE
INSERT INTO t1 VALUES (1, 'a'), (2, 'b');
INSERT INTO t2 VALUES (1, 'c');
TRUNCATE t1;
INSERT INTO t1 VALUES (3, 'c');
TRUNCATE t1, t2;
SELECT pg_logical_emit_message(true, 'audit', 'transactional text');
SELECT pg_logical_emit_message(false, 'audit', 'not transactional');
SELECT pg_logical_emit_message(true, 'bin', '\x00ff'::bytea);
BEGIN;
INSERT INTO t2 VALUES (2, 'd');
SELECT pg_logical_emit_message(true, '', 'in a transaction with a row');
COMMIT;
