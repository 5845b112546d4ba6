-- message.prefix.exclude.list: logical decoding messages whose prefix one of its regular expressions matches
-- (whole, case-insensitively) are skipped, transactional or not; the others are emitted. A skipped message of
-- a transaction is not counted in its END event (provide.transaction.metadata).
-- @@property message.prefix.exclude.list=noise.*,SKIP
-- @@property provide.transaction.metadata=true
-- @@property transaction.id.mode=debezium
CREATE TABLE t (id int PRIMARY KEY, v text);
-- @@CAPTURE
SELECT pg_logical_emit_message(false, 'noise', 'skipped: noise.*');
SELECT pg_logical_emit_message(false, 'skip', 'skipped: SKIP, any case');
SELECT pg_logical_emit_message(false, 'skipper', 'kept: SKIP matches whole prefixes only');
SELECT pg_logical_emit_message(false, '', 'kept: the empty prefix');
BEGIN;
INSERT INTO t VALUES (1, 'a');
SELECT pg_logical_emit_message(true, 'noise-1', 'skipped, in a transaction with a row');
SELECT pg_logical_emit_message(true, 'audit', 'kept, in a transaction with a row');
SELECT pg_logical_emit_message(false, 'Skip', 'skipped, not transactional, inside a transaction');
INSERT INTO t VALUES (2, 'b');
COMMIT;
