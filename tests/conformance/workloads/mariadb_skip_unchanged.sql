-- skip.messages.without.change with column.include.list on MariaDB: an update that changes only columns
-- left out of the events is not emitted.
-- @@property skip.messages.without.change=true
-- @@property column.include.list=lab\.t\.(id|a)
CREATE TABLE t (id int PRIMARY KEY, a int, b int) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO t VALUES (1, 1, 1);
UPDATE t SET b = 2 WHERE id = 1;
UPDATE t SET a = 2 WHERE id = 1;
UPDATE t SET a = 3, b = 3 WHERE id = 1;
