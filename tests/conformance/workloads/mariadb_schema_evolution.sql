-- Schema changes mid-stream: ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, ALTER COLUMN SET DEFAULT,
-- a sequence of ALTERs that widens int to bigint, RENAME TABLE, tables created after the start
-- (plain, LIKE, AS SELECT), CONVERT TO CHARACTER SET, a partitioned table. (What Debezium 3.5
-- does not apply to its schema, ALGORITHM=/LOCK= clauses, versioned comments and CREATE OR
-- REPLACE, is in tests/conformance/test_ddl_edges.py: Debezium stops on the rows after them.)
CREATE TABLE evo (id int PRIMARY KEY, a varchar(10), n int) CHARACTER SET utf8mb4;
CREATE TABLE parted (id int NOT NULL, at date NOT NULL, v int, PRIMARY KEY (id, at))
  PARTITION BY RANGE (YEAR(at)) (PARTITION p2024 VALUES LESS THAN (2025), PARTITION pmax VALUES LESS THAN MAXVALUE);
-- @@CAPTURE
INSERT INTO evo VALUES (1, 'a1', 1);
ALTER TABLE evo ADD COLUMN b int;
INSERT INTO evo VALUES (2, 'a2', 2, 2);
ALTER TABLE evo ADD COLUMN c varchar(10) NOT NULL DEFAULT 'dflt' AFTER id;
INSERT INTO evo (id, a) VALUES (3, 'a3');
ALTER TABLE evo MODIFY COLUMN n bigint;
INSERT INTO evo (id, n) VALUES (4, 5000000000);
ALTER TABLE evo MODIFY COLUMN n bigint unsigned DEFAULT 0;
ALTER TABLE evo ALTER COLUMN b SET DEFAULT 7;
INSERT INTO evo (id) VALUES (5);
ALTER TABLE evo CHANGE COLUMN a aa varchar(30) CHARACTER SET latin1;
ALTER TABLE evo RENAME COLUMN aa TO a3;
UPDATE evo SET a3 = 'x' WHERE id = 1;
ALTER TABLE evo DROP COLUMN b;
INSERT INTO evo (id, a3) VALUES (6, 'six');
ALTER TABLE evo ADD COLUMN versioned int DEFAULT 9;
INSERT INTO evo (id) VALUES (7);
RENAME TABLE evo TO evo2;
INSERT INTO evo2 (id) VALUES (8);
CREATE TABLE late (id int AUTO_INCREMENT PRIMARY KEY, name varchar(20) DEFAULT 'n/a', CHECK (length(name) > 0)) CHARACTER SET utf8mb4;
INSERT INTO late (name) VALUES ('first'), (DEFAULT);
CREATE TABLE late_like LIKE late;
INSERT INTO late_like VALUES (100, 'copied');
CREATE TABLE late_as AS SELECT id, name FROM late;
INSERT INTO late_as VALUES (7, 'seven');
DROP TABLE late_as;
CREATE TABLE late_as (k int PRIMARY KEY, w text) CHARACTER SET utf8mb4;
INSERT INTO late_as VALUES (1, 'replaced');
ALTER TABLE late CONVERT TO CHARACTER SET latin1;
INSERT INTO late (name) VALUES ('latin');
INSERT INTO parted VALUES (1, '2024-06-01', 1), (2, '2030-01-01', 2);
ALTER TABLE parted ADD COLUMN w int DEFAULT 0;
UPDATE parted SET v = 3 WHERE id = 1;
DROP TABLE late_like;
DELETE FROM evo2 WHERE id = 1;
