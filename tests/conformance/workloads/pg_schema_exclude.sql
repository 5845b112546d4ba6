-- schema.exclude.list alone: every table of the other schemas is captured, in the snapshot and the stream.
-- @@property snapshot.mode=initial
-- @@property schema.exclude.list=public,sec.*
CREATE SCHEMA sales;
CREATE SCHEMA secret;
CREATE TABLE sales.orders (id int PRIMARY KEY, amount numeric(8,2));
CREATE TABLE secret.keys (id int PRIMARY KEY, k text);
CREATE TABLE public.plain (id int PRIMARY KEY, name text);
INSERT INTO sales.orders VALUES (1, 9.50);
INSERT INTO secret.keys VALUES (1, 'k1');
INSERT INTO public.plain VALUES (1, 'p');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE public.wal_filler (id int);
-- @@STEP
INSERT INTO sales.orders VALUES (2, 12.00);
INSERT INTO secret.keys VALUES (2, 'k2');
INSERT INTO public.plain VALUES (2, 'q');
UPDATE sales.orders SET amount = 10 WHERE id = 1;
