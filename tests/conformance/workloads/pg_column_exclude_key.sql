-- column.exclude.list naming a key column: the column leaves the row, the key keeps it.
-- @@property snapshot.mode=initial
-- @@property column.exclude.list=public\.notes\.id,public\.notes\.author
CREATE TABLE notes (id int PRIMARY KEY, body text, author text);
INSERT INTO notes VALUES (1, 'hello', 'A');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO notes VALUES (2, 'world', 'B');
UPDATE notes SET body = 'world!' WHERE id = 2;
DELETE FROM notes WHERE id = 1;
