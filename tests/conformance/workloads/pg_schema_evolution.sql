-- Schema changes mid-stream: ADD COLUMN (with and without DEFAULT, NOT NULL), DROP COLUMN, ALTER
-- TYPE, RENAME COLUMN, RENAME TABLE, tables created after the start (plain, LIKE, AS SELECT),
-- and a partitioned table. Each statement commits on its own and the connector reads it before the
-- next one: both connectors read table definitions from the catalog when the stream reaches them.
CREATE TABLE evo (id int PRIMARY KEY, a text);
CREATE TABLE measurements (id int, at date NOT NULL, v numeric(6,2), PRIMARY KEY (id, at)) PARTITION BY RANGE (at);
CREATE TABLE measurements_2024 PARTITION OF measurements FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE measurements_2025 PARTITION OF measurements FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
-- @@CAPTURE
INSERT INTO evo VALUES (1, 'a1');
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo ADD COLUMN b int;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO evo VALUES (2, 'a2', 2);
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo ADD COLUMN c text NOT NULL DEFAULT 'dflt';
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo ADD COLUMN d numeric(5,2) DEFAULT 1.5;
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo ADD COLUMN e timestamp DEFAULT '2024-01-01 00:00:00';
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo ADD COLUMN f boolean DEFAULT true;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO evo (id, a) VALUES (3, 'a3');
-- @@SLEEP 0.4
-- @@STEP
UPDATE evo SET b = 1 WHERE id = 1;
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo DROP COLUMN a;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO evo (id, b) VALUES (4, 4);
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo ALTER COLUMN b TYPE bigint;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO evo (id, b) VALUES (5, 5000000000);
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo RENAME COLUMN b TO bb;
-- @@SLEEP 0.4
-- @@STEP
UPDATE evo SET bb = 6 WHERE id = 2;
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE evo RENAME TO evo2;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO evo2 (id, bb) VALUES (6, 6);
-- @@SLEEP 0.4
-- @@STEP
CREATE TABLE late (id serial PRIMARY KEY, name varchar(20) DEFAULT 'n/a');
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO late (name) VALUES ('first'), (DEFAULT);
-- @@SLEEP 0.4
-- @@STEP
CREATE TABLE late_like (LIKE late INCLUDING ALL);
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO late_like VALUES (100, 'copied');
-- @@SLEEP 0.4
-- @@STEP
CREATE TABLE late_as AS SELECT id, name FROM late;
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO late_as VALUES (7, 'seven');
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO measurements VALUES (1, '2024-06-01', 1.25), (2, '2025-06-01', 2.5);
-- @@SLEEP 0.4
-- @@STEP
UPDATE measurements SET v = 3 WHERE id = 1;
-- @@SLEEP 0.4
-- @@STEP
DELETE FROM evo2 WHERE id = 1;
