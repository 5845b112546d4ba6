-- message.prefix.include.list: only logical decoding messages whose prefix one of its regular expressions
-- matches (whole, case-insensitively) are emitted; the others are skipped, transactional or not.
-- @@property message.prefix.include.list=audit.*,KEEP
CREATE TABLE t (id int PRIMARY KEY, v text);
-- @@CAPTURE
SELECT pg_logical_emit_message(true, 'audit', 'kept: audit.*');
SELECT pg_logical_emit_message(false, 'audit-log', 'kept, not transactional');
SELECT pg_logical_emit_message(true, 'keep', 'kept: KEEP, any case');
SELECT pg_logical_emit_message(true, 'keeper', 'skipped: KEEP matches whole prefixes only');
SELECT pg_logical_emit_message(false, 'other', 'skipped, not transactional');
SELECT pg_logical_emit_message(true, '', 'skipped: the empty prefix');
BEGIN;
INSERT INTO t VALUES (1, 'a');
SELECT pg_logical_emit_message(true, 'other', 'skipped, in a transaction with a row');
SELECT pg_logical_emit_message(true, 'auditing', 'kept, in a transaction with a row');
COMMIT;
