-- include.query=true: each row change carries the statement that made it (source.query), from MariaDB's
-- Annotate_rows events (binlog_annotate_row_events, on by default); several rows of one statement, and a
-- statement with a comment and a password-like literal.
-- @@property include.query=true
CREATE TABLE q (id int PRIMARY KEY, v varchar(20)) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO q VALUES (1, 'one'), (2, 'two');
UPDATE q SET v = 'uno' /* a comment */ WHERE id = 1;
DELETE FROM q WHERE id = 2;
INSERT INTO q VALUES (3, 'password=secret');
