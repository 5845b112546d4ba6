-- Topic naming with a non-default delimiter and transaction topic (topic.delimiter, topic.transaction),
-- under DefaultTopicNamingStrategy: PostgreSQL's table ids have no catalog, so its topics are
-- <prefix>_<table>; key, value and envelope schemas are named after the topic.
-- @@property snapshot.mode=initial
-- @@property topic.naming.strategy=io.debezium.schema.DefaultTopicNamingStrategy
-- @@property topic.delimiter=_
-- @@property provide.transaction.metadata=true
-- @@property topic.transaction=txn
CREATE TABLE orders (id int PRIMARY KEY, total numeric(10,2));
CREATE TABLE lines (order_id int, line int, sku text, PRIMARY KEY (order_id, line));
INSERT INTO orders VALUES (1, 10.00);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid
CREATE TABLE wal_filler (id int);
-- @@STEP
BEGIN;
INSERT INTO orders VALUES (2, 5.00);
INSERT INTO lines VALUES (2, 1, 'sku-1');
UPDATE orders SET total = 6.00 WHERE id = 2;
COMMIT;
DELETE FROM orders WHERE id = 1;
