-- Column masking, hashing, truncation and source types on MariaDB (column.mask.with.N.chars,
-- column.mask.hash.ALG.with.salt.S and its v2, column.truncate.to.N.chars, column.propagate.source.type,
-- datatype.propagate.source.type) in the snapshot and the stream.
-- @@property snapshot.mode=initial
-- @@property column.mask.with.8.chars=lab\.customers\.email,lab\.customers\.score,lab\.accounts\.login
-- @@property column.mask.hash.SHA-256.with.salt.CzQMA0cB5K=lab\.customers\.ssn,lab\.customers\.name
-- @@property column.mask.hash.v2.SHA-512.with.salt.pepper=lab\.customers\.bio,lab\.customers\.notes
-- @@property column.truncate.to.5.chars=lab\.customers\.secret,lab\.customers\.blob,lab\.customers\.short,lab\.customers\.city,lab\.customers\.doc
-- @@property column.propagate.source.type=lab\.typed\..*
-- @@property datatype.propagate.source.type=.+\.VARCHAR,.+\.DECIMAL
CREATE TABLE customers (id int PRIMARY KEY, email varchar(60), ssn char(11), name text, notes mediumtext,
  bio varchar(200), score decimal(8,2), bin varbinary(10), `blob` blob, secret text, short varchar(4),
  city varchar(30), doc json) CHARACTER SET utf8mb4;
CREATE TABLE accounts (login varchar(20) PRIMARY KEY, balance int) CHARACTER SET utf8mb4;
CREATE TABLE typed (id int PRIMARY KEY, v varchar(12), c char(3), t text, n decimal(10,3), f double, r float,
  b tinyint(1), d date, ts datetime(3), tz timestamp(6) NULL, bi bigint unsigned, e enum('x','y'), s set('p','q'),
  y year, bits bit(3), by_ varbinary(8)) CHARACTER SET utf8mb4;
CREATE TABLE other (id int PRIMARY KEY, v varchar(5), n decimal(4,1), t text) CHARACTER SET utf8mb4;
INSERT INTO customers VALUES (1, 'ann@example.com', '123-45-6789', 'Ann', 'first notes', 'bio one', 12.50, x'0102',
  x'0102030405060708', 'top secret value', 'abcd', 'Zürich-Nord', '{"k": 1}');
INSERT INTO accounts VALUES ('ann', 10);
INSERT INTO typed VALUES (1, 'v', 'abc', 't', 1.5, 1.25, 2.5, 1, '2024-01-02', '2024-01-02 03:04:05.123',
  '2024-01-02 03:04:05', 7, 'x', 'p,q', 2024, b'101', x'01');
-- @@CAPTURE
INSERT INTO customers VALUES (2, 'bob@example.com', '987-65-4321', 'Bøb Ünïcode ✓', NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL);
UPDATE customers SET email = 'ann@new.example.com', secret = 'another secret' WHERE id = 1;
DELETE FROM customers WHERE id = 2;
INSERT INTO accounts VALUES ('bob', 20);
UPDATE accounts SET login = 'ann2' WHERE login = 'ann';
INSERT INTO typed VALUES (2, 'w', 'def', 'u', 2.5, 2.25, 3.5, 0, '2024-02-03', '2024-02-03 04:05:06.789',
  '2024-02-03 04:05:06', 8, 'y', 'q', 2025, b'011', x'02');
INSERT INTO other VALUES (1, 'x', 1.5, 't');
ALTER TABLE other ADD COLUMN w varchar(7);
INSERT INTO other VALUES (2, 'y', 2.5, 'u', 'w');
