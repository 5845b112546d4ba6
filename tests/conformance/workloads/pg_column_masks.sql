-- Column masking, hashing and truncation (column.mask.with.N.chars, column.mask.hash.ALG.with.salt.S and
-- its v2, column.truncate.to.N.chars) in the snapshot and the stream, in keys and values, over NULLs,
-- non-ASCII text and columns of types the mappers leave alone (numbers, bytea, arrays, json).
-- @@property snapshot.mode=initial
-- @@property column.mask.with.8.chars=public\.customers\.email,public\.customers\.score,public\.customers\.photo,public\.accounts\.login,public\.kinds\.(mood|dom|x|nm|ch|j)
-- @@property column.mask.hash.SHA-256.with.salt.CzQMA0cB5K=public\.customers\.ssn,public\.customers\.name
-- @@property column.mask.hash.v2.MD5.with.salt.pepper=public\.customers\.bio,public\.customers\.notes,public\.customers\.tags
-- @@property column.truncate.to.5.chars=public\.customers\.secret,public\.customers\.blob,public\.customers\.doc,public\.customers\.short,public\.customers\.city
CREATE TABLE customers (id int PRIMARY KEY, email varchar(60), ssn char(11), name text, notes text,
  bio varchar(200), score numeric(8,2), tags text[], doc jsonb, photo bytea, blob bytea, secret text,
  short varchar(4), city varchar(30));
CREATE TABLE accounts (login varchar(20) PRIMARY KEY, balance int);
CREATE TYPE mood AS ENUM ('sad', 'happy');
CREATE DOMAIN shortstr AS varchar(10);
CREATE TABLE kinds (id int PRIMARY KEY, mood mood, dom shortstr, x xml, nm name, ch "char", j json);
INSERT INTO customers VALUES (1, 'ann@example.com', '123-45-6789', 'Ann', 'first notes', 'bio one', 12.50,
  '{a,b}', '{"k": 1}', '\x0102', '\x0102030405060708', 'top secret value', 'abcd', 'Zürich-Nord');
INSERT INTO accounts VALUES ('ann', 10);
INSERT INTO kinds VALUES (1, 'happy', 'dv', '<a/>', 'nm', 'c', '{}');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO customers VALUES (2, 'bob@example.com', '987-65-4321', 'Bøb Ünïcode ✓', NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO customers VALUES (3, NULL, NULL, NULL, 'n3', 'b3', 1, '{}', '[]', '\x', '\x00', 'tiny', 'ab', 'Bern');
UPDATE customers SET email = 'ann@new.example.com', secret = 'another secret' WHERE id = 1;
DELETE FROM customers WHERE id = 3;
INSERT INTO accounts VALUES ('bob', 20);
UPDATE accounts SET balance = 11 WHERE login = 'ann';
UPDATE accounts SET login = 'ann2' WHERE login = 'ann';
