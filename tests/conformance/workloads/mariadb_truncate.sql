-- TRUNCATE (emitted once skipped.operations no longer lists t), with and without the TABLE keyword,
-- qualified, and of a table that is not captured.
-- @@property skipped.operations=none
-- @@property table.include.list=lab.t1,lab.t2
CREATE TABLE t1 (id int PRIMARY KEY, v varchar(5)) CHARACTER SET utf8mb4;
CREATE TABLE t2 (id int PRIMARY KEY, v varchar(5)) CHARACTER SET utf8mb4;
CREATE TABLE other (id int PRIMARY KEY) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO t1 VALUES (1, 'a'), (2, 'b');
INSERT INTO t2 VALUES (1, 'c');
INSERT INTO other VALUES (1);
TRUNCATE t1;
INSERT INTO t1 VALUES (3, 'c');
TRUNCATE TABLE lab.t2;
TRUNCATE other;
INSERT INTO t2 VALUES (2, 'd');
