-- column.exclude.list naming a key column: the column leaves the row, the key keeps it.
-- @@property snapshot.mode=initial
-- @@property column.exclude.list=public\.notes\.id,public\.notes\.author
CREATE TABLE notes (id int PRIMARY KEY, body text, author text);
INSERT INTO notes VALUES (1, 'hello', 'A');
-- @@CAPTURE
INSERT INTO notes VALUES (2, 'world', 'B');
UPDATE notes SET body = 'world!' WHERE id = 2;
DELETE FROM notes WHERE id = 1;
