-- message.key.columns on MariaDB: a key of nullable columns for a table with a primary key and one without.
-- @@property snapshot.mode=initial
-- @@property message.key.columns=lab.orders:customer,region;lab.nokey:code
CREATE TABLE orders (id int PRIMARY KEY, customer varchar(10), region varchar(8), total int) CHARACTER SET utf8mb4;
CREATE TABLE nokey (code varchar(5), v int) CHARACTER SET utf8mb4;
INSERT INTO orders VALUES (1, 'ann', 'eu', 10);
INSERT INTO nokey VALUES ('a', 1);
-- @@CAPTURE
INSERT INTO orders VALUES (2, 'bob', NULL, 20);
UPDATE orders SET total = 11 WHERE id = 1;
UPDATE nokey SET v = 2 WHERE code = 'a';
DELETE FROM orders WHERE id = 2;
