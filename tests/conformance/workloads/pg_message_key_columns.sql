-- message.key.columns: a key of nullable columns for a table with a primary key and one without, through
-- the snapshot and the stream (the key fields are declared required, as the primary key's are).
-- @@property snapshot.mode=initial
-- @@property message.key.columns=public.orders:customer,region;public.nokey:code
CREATE TABLE orders (id int PRIMARY KEY, customer text, region varchar(8), total int);
CREATE TABLE nokey (code text, v int);
ALTER TABLE nokey REPLICA IDENTITY FULL;
INSERT INTO orders VALUES (1, 'ann', 'eu', 10);
INSERT INTO nokey VALUES ('a', 1);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO orders VALUES (2, 'bob', NULL, 20);
UPDATE orders SET total = 11 WHERE id = 1;
UPDATE nokey SET v = 2 WHERE code = 'a';
DELETE FROM orders WHERE id = 2;
