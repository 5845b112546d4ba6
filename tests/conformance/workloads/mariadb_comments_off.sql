-- The statements of mariadb_comments at the default include.schema.comments=false.
CREATE TABLE snap (id int PRIMARY KEY COMMENT 'the key', v varchar(10) COMMENT 'a value') COMMENT 'snapshot table' CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO snap VALUES (1, 'one');
CREATE TABLE c (id int PRIMARY KEY COMMENT 'id''s comment', a int COMMENT "double \"quoted\"", b varchar(5) COMMENT 'back\\slash', n int) COMMENT='table c' CHARACTER SET utf8mb4;
INSERT INTO c VALUES (1, 2, 'x', 3);
ALTER TABLE c ADD COLUMN d int COMMENT 'added';
ALTER TABLE c MODIFY COLUMN n bigint COMMENT 'modified';
ALTER TABLE c CHANGE COLUMN a a2 int COMMENT '';
ALTER TABLE c COMMENT = 'table c, altered';
INSERT INTO c VALUES (2, 3, 'y', 4, 5);
ALTER TABLE snap MODIFY COLUMN v varchar(20);
INSERT INTO snap VALUES (2, 'two');
CREATE TABLE nocomment (id int PRIMARY KEY) CHARACTER SET utf8mb4;
INSERT INTO nocomment VALUES (1);
