-- Keys: a primary-key change (delete + tombstone + create with the newkey/oldkey headers), composite
-- keys, a key changed with other columns, a table without a key, and one with only a unique key.
CREATE TABLE pk (id int PRIMARY KEY, v varchar(10)) CHARACTER SET utf8mb4;
CREATE TABLE composite (a int, b varchar(5), v int, PRIMARY KEY (a, b)) CHARACTER SET utf8mb4;
CREATE TABLE keyless (x int, y varchar(5)) CHARACTER SET utf8mb4;
CREATE TABLE uniq (id int NOT NULL, code varchar(5) NOT NULL, UNIQUE KEY (code)) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO pk VALUES (1, 'one'), (2, 'two');
INSERT INTO composite VALUES (1, 'a', 10), (1, 'b', 20);
INSERT INTO keyless VALUES (1, 'x'), (1, 'x'), (2, 'y');
INSERT INTO uniq VALUES (1, 'c1');
UPDATE pk SET id = 10 WHERE id = 1;
UPDATE pk SET id = 20, v = 'twenty' WHERE id = 2;
UPDATE composite SET b = 'c' WHERE a = 1 AND b = 'a';
UPDATE composite SET v = 21 WHERE a = 1 AND b = 'b';
UPDATE keyless SET y = 'z' WHERE x = 2;
DELETE FROM keyless WHERE x = 1;
UPDATE uniq SET code = 'c2' WHERE id = 1;
DELETE FROM pk WHERE id = 10;
DELETE FROM composite WHERE a = 1;
DELETE FROM uniq;
