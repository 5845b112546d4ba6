-- post.processors=reselector on MariaDB: null columns are read again from the table by key
-- (reselect.null.values, on by default); here they are still null, as they do not change after the insert
-- (a reselect reads the row as it is when the event is processed).
-- @@property post.processors=reselector
-- @@property reselector.type=io.debezium.processors.reselect.ReselectColumnsPostProcessor
CREATE TABLE docs (id int PRIMARY KEY, title varchar(20), note text) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO docs VALUES (1, 't1', NULL);
UPDATE docs SET title = 't1 updated' WHERE id = 1;
INSERT INTO docs VALUES (2, 't2', 'n2');
