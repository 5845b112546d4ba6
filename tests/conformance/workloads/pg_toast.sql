-- TOASTed values (over 8 kB, stored out of line) updated without touching them: with REPLICA
-- IDENTITY DEFAULT the old value is not in the WAL and Debezium writes its placeholder; with FULL
-- it is.
CREATE TABLE docs (id int PRIMARY KEY, title text, body text, tags text[], payload jsonb, blob bytea);
CREATE TABLE docs_full (id int PRIMARY KEY, title text, body text, blob bytea);
ALTER TABLE docs_full REPLICA IDENTITY FULL;
-- EXTERNAL: out of line and uncompressed, so the repetitive values below are really TOASTed
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL, ALTER COLUMN tags SET STORAGE EXTERNAL,
  ALTER COLUMN payload SET STORAGE EXTERNAL, ALTER COLUMN blob SET STORAGE EXTERNAL;
ALTER TABLE docs_full ALTER COLUMN body SET STORAGE EXTERNAL, ALTER COLUMN blob SET STORAGE EXTERNAL;
-- @@CAPTURE
INSERT INTO docs VALUES (1, 't1', repeat('0123456789abcdef', 1000) || md5('x'), array_fill('tag'::text, ARRAY[3000]),
                          ('{"k": "' || repeat('v', 20000) || '"}')::jsonb, decode(repeat('deadbeef', 5000), 'hex'));
INSERT INTO docs VALUES (2, 't2', 'short', '{a}', '{}', '\x00');
INSERT INTO docs_full VALUES (1, 't1', repeat('fedcba9876543210', 1000) || md5('y'), decode(repeat('cafe', 9000), 'hex'));
-- @@STEP
UPDATE docs SET title = 't1 updated' WHERE id = 1;
UPDATE docs SET title = 't2 updated' WHERE id = 2;
UPDATE docs_full SET title = 't1 updated' WHERE id = 1;
UPDATE docs SET body = body || 'more', title = 't1 again' WHERE id = 1;
DELETE FROM docs WHERE id = 1;
DELETE FROM docs_full WHERE id = 1;
