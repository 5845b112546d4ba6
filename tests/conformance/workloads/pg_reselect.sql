-- post.processors=reselector (Debezium's ReselectColumnsPostProcessor): an update that leaves a TOASTed
-- value alone (REPLICA IDENTITY DEFAULT, so pgoutput does not send it) gets the value read again from the
-- table by key instead of the placeholder; a null column is read again too (reselect.null.values, which
-- finds it still null). The reselected columns do not change after the insert: what a reselect reads is the
-- row as it is when the event is processed, not as the transaction left it.
-- @@property post.processors=reselector
-- @@property reselector.type=io.debezium.processors.reselect.ReselectColumnsPostProcessor
-- @@property reselector.reselect.columns.include.list=public\.docs:body,public\.docs:tags,public\.docs:payload,public\.docs:blob,public\.docs:note
CREATE TABLE docs (id int PRIMARY KEY, title text, body text, tags text[], payload jsonb, blob bytea, note text);
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL, ALTER COLUMN tags SET STORAGE EXTERNAL,
  ALTER COLUMN payload SET STORAGE EXTERNAL, ALTER COLUMN blob SET STORAGE EXTERNAL;
-- @@CAPTURE
INSERT INTO docs VALUES (1, 't1', repeat('0123456789abcdef', 1000) || md5('x'), array_fill('tag'::text, ARRAY[3000]),
                          ('{"k": "' || repeat('v', 20000) || '"}')::jsonb, decode(repeat('deadbeef', 5000), 'hex'), NULL);
-- @@STEP
UPDATE docs SET title = 't1 updated' WHERE id = 1;
-- @@STEP
UPDATE docs SET title = 't1 again' WHERE id = 1;
INSERT INTO docs VALUES (2, 't2', 'short', '{a}', '{}', '\x00', NULL);
UPDATE docs SET title = 't2 updated' WHERE id = 2;
