-- Types at the edge of Debezium's type map: point becomes io.debezium.data.geometry.Point
-- ({x, y, wkb, srid}); box, circle, line, lseg, path, polygon, tsquery, pg_lsn and txid_snapshot
-- have no mapping and are left out (include.unknown.datatypes=false, the default). An unchanged
-- TOASTed int[] and text[] under REPLICA IDENTITY DEFAULT; rows written just before a RENAME
-- TABLE and read after it; a transactional logical message inside a transaction, with
-- transaction metadata on.
-- @@property provide.transaction.metadata=true
CREATE TABLE geo (id int PRIMARY KEY, p point, p_nn point NOT NULL DEFAULT point(0, 0), bx box, ci circle,
                  li line, ls lseg, pa path, pg polygon, q tsquery, lsn pg_lsn, snap txid_snapshot, label text);
CREATE TABLE arrs (id int PRIMARY KEY, title text, ints int[], texts text[], nums numeric(6,2)[], i2 int2[], ds date[],
                   us uuid[], jbs jsonb[], bys bytea[], xs xml[]);
ALTER TABLE arrs ALTER COLUMN ints SET STORAGE EXTERNAL, ALTER COLUMN texts SET STORAGE EXTERNAL,
  ALTER COLUMN nums SET STORAGE EXTERNAL, ALTER COLUMN i2 SET STORAGE EXTERNAL, ALTER COLUMN ds SET STORAGE EXTERNAL,
  ALTER COLUMN us SET STORAGE EXTERNAL, ALTER COLUMN jbs SET STORAGE EXTERNAL, ALTER COLUMN bys SET STORAGE EXTERNAL,
  ALTER COLUMN xs SET STORAGE EXTERNAL;
CREATE TABLE ren (id int PRIMARY KEY, v text);
CREATE TABLE side (id int PRIMARY KEY, v text);
-- @@CAPTURE
INSERT INTO geo VALUES (1, '(1.5,-2.25)', '(3,4)', '((0,0),(1,1))', '<(1,1),2>', '{1,-1,0}', '[(0,0),(1,1)]',
                        '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(2,0))', 'fat & rat', '16/B374D848', '10:20:10,14,15', 'a');
INSERT INTO geo (id, label) VALUES (2, 'b');
UPDATE geo SET p = '(-0.5,1e10)', label = 'a2' WHERE id = 1;
DELETE FROM geo WHERE id = 2;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO arrs VALUES (1, 't', array_fill(7, ARRAY[5000]), array_fill('x'::text, ARRAY[3000]),
                         array_fill(1.25::numeric(6,2), ARRAY[3000]), array_fill(1::int2, ARRAY[5000]),
                         array_fill('2024-01-01'::date, ARRAY[5000]),
                         array_fill('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, ARRAY[2000]),
                         array_fill('{"a":1}'::jsonb, ARRAY[3000]), array_fill('\x0102'::bytea, ARRAY[5000]),
                         array_fill('<a/>'::xml, ARRAY[3000]));
UPDATE arrs SET title = 't2' WHERE id = 1;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO ren VALUES (1, 'before the rename');
ALTER TABLE ren RENAME TO ren_new;
INSERT INTO ren_new VALUES (2, 'after the rename');
-- @@SLEEP 0.4
-- @@STEP
BEGIN;
INSERT INTO side VALUES (1, 'a');
SELECT pg_logical_emit_message(true, 'audit', 'in a transaction');
INSERT INTO side VALUES (2, 'b');
COMMIT;
SELECT pg_logical_emit_message(true, 'audit', 'alone');
