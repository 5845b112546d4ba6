-- column.include.list: only the listed columns (the key included or not) in snapshot and stream events.
-- @@property snapshot.mode=initial
-- @@property column.include.list=public\.people\.(id|email),public\.notes\.body
CREATE TABLE people (id int PRIMARY KEY, email text, phone text, name text);
CREATE TABLE notes (id int PRIMARY KEY, body text, author text);
INSERT INTO people VALUES (1, 'a@x', '555', 'A');
INSERT INTO notes VALUES (1, 'hello', 'A');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO people VALUES (2, 'b@x', '556', 'B');
UPDATE people SET phone = '557' WHERE id = 2;
INSERT INTO notes VALUES (2, 'world', 'B');
DELETE FROM notes WHERE id = 1;
