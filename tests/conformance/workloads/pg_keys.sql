-- Keys: a primary-key change (delete + tombstone + create with the newkey/oldkey headers), composite
-- keys, a key changed together with other columns, tables without a key under REPLICA IDENTITY
-- FULL and DEFAULT, and REPLICA IDENTITY USING INDEX.
CREATE TABLE pk (id int PRIMARY KEY, v text);
CREATE TABLE composite (a int, b text, v int, PRIMARY KEY (a, b));
CREATE TABLE keyless_full (x int, y text);
ALTER TABLE keyless_full REPLICA IDENTITY FULL;
CREATE TABLE keyless_default (x int, y text);
CREATE TABLE by_index (id int NOT NULL, code text NOT NULL, v int);
CREATE UNIQUE INDEX by_index_code ON by_index (code);
ALTER TABLE by_index REPLICA IDENTITY USING INDEX by_index_code;
CREATE TABLE pk_full (id int PRIMARY KEY, v text);
ALTER TABLE pk_full REPLICA IDENTITY FULL;
-- @@CAPTURE
INSERT INTO pk VALUES (1, 'one'), (2, 'two');
INSERT INTO composite VALUES (1, 'a', 10), (1, 'b', 20);
INSERT INTO keyless_full VALUES (1, 'x'), (1, 'x'), (2, 'y');
INSERT INTO keyless_default VALUES (1, 'p');
INSERT INTO by_index VALUES (1, 'c1', 100);
INSERT INTO pk_full VALUES (1, 'f');
-- @@STEP
UPDATE pk SET id = 10 WHERE id = 1;
UPDATE pk SET id = 20, v = 'twenty' WHERE id = 2;
UPDATE composite SET b = 'c' WHERE a = 1 AND b = 'a';
UPDATE composite SET v = 21 WHERE a = 1 AND b = 'b';
UPDATE keyless_full SET y = 'z' WHERE x = 2;
DELETE FROM keyless_full WHERE x = 1;
INSERT INTO keyless_default VALUES (2, 'q');
UPDATE by_index SET code = 'c2' WHERE id = 1;
UPDATE by_index SET v = 101 WHERE id = 1;
UPDATE pk_full SET id = 2 WHERE id = 1;
UPDATE pk_full SET v = 'g' WHERE id = 2;
-- @@STEP
DELETE FROM pk WHERE id = 10;
DELETE FROM composite WHERE a = 1;
DELETE FROM by_index WHERE id = 1;
DELETE FROM pk_full WHERE id = 2;
