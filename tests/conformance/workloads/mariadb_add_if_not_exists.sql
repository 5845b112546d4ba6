-- ALTER TABLE ... ADD COLUMN IF NOT EXISTS of a column that exists: the server changes nothing (a
-- note, no error) and logs the statement; Debezium's parser replaces the column with the new
-- definition, so the rows after it are decoded with a type the table does not have (an INT read as
-- VARCHAR comes out null). cdc leaves the column as it is (docs/debezium-differences.md).
CREATE TABLE t (id int PRIMARY KEY, a int);
-- @@CAPTURE
ALTER TABLE t ADD COLUMN IF NOT EXISTS a varchar(10);
-- @@STEP
ALTER TABLE t ADD COLUMN IF NOT EXISTS b varchar(10);
-- @@STEP
INSERT INTO t VALUES (1, 5, 'x');
