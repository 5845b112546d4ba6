-- What the initial snapshot reads on MariaDB: snapshot.include.collection.list leaves lab.audit out of the
-- snapshot (its schema is still read, and its changes are streamed); snapshot.select.statement.overrides
-- reads lab.orders with a SELECT that leaves deleted orders out, in its own order, and lab.customers with
-- one that returns some of its columns in another order (matched by name; the column it leaves out is null:
-- Debezium fails when that is the table's last column).
-- @@property snapshot.mode=initial
-- @@property snapshot.include.collection.list=lab\.orders,lab\.customers
-- @@property snapshot.select.statement.overrides=lab.orders,lab.customers
-- @@property snapshot.select.statement.overrides.lab.orders=SELECT * FROM lab.orders WHERE status <> 'deleted' ORDER BY id DESC
-- @@property snapshot.select.statement.overrides.lab.customers=SELECT email, id FROM lab.customers WHERE id < 3
CREATE TABLE orders (id int PRIMARY KEY, status varchar(10), total decimal(8,2));
CREATE TABLE customers (id int PRIMARY KEY, name varchar(20), email varchar(40));
CREATE TABLE audit (id int PRIMARY KEY, note varchar(40));
INSERT INTO orders VALUES (1, 'open', 10.00), (2, 'deleted', 20.00), (3, 'shipped', 30.00), (4, 'deleted', 1.00);
INSERT INTO customers VALUES (1, 'ann', 'ann@example.com'), (2, 'bob', 'bob@example.com'), (3, 'cy', NULL);
INSERT INTO audit VALUES (1, 'before the snapshot');
-- @@CAPTURE
INSERT INTO audit VALUES (2, 'streamed');
UPDATE audit SET note = 'changed' WHERE id = 1;
INSERT INTO orders VALUES (5, 'open', 5.00);
UPDATE customers SET email = 'cy@example.com' WHERE id = 3;
