-- skip.messages.without.change with column.include.list: an update that changes only columns left out of
-- the events is not emitted (REPLICA IDENTITY FULL gives the before image to compare); one that changes an
-- included column, or a table without a before image, is.
-- @@property skip.messages.without.change=true
-- @@property column.include.list=public\.t\.(id|a),public\.d\..*
CREATE TABLE t (id int PRIMARY KEY, a int, b int);
ALTER TABLE t REPLICA IDENTITY FULL;
CREATE TABLE d (id int PRIMARY KEY, a int);
-- @@CAPTURE
INSERT INTO t VALUES (1, 1, 1);
UPDATE t SET b = 2 WHERE id = 1;
UPDATE t SET a = 2 WHERE id = 1;
UPDATE t SET a = 2 WHERE id = 1;
INSERT INTO d VALUES (1, 1);
UPDATE d SET a = 1 WHERE id = 1;
