-- Transaction metadata (BEGIN/END events and the transaction block) across several tables, with
-- savepoints, a rollback to a savepoint, a transaction rolled back whole, and one between DDL.
-- @@property provide.transaction.metadata=true
CREATE TABLE orders (id int PRIMARY KEY, customer int, total decimal(10,2)) CHARACTER SET utf8mb4;
CREATE TABLE order_lines (order_id int, line int, sku varchar(20), PRIMARY KEY (order_id, line)) CHARACTER SET utf8mb4;
CREATE TABLE customers (id int PRIMARY KEY, name varchar(20)) CHARACTER SET utf8mb4;
-- @@CAPTURE
BEGIN;
INSERT INTO customers VALUES (1, 'Ada');
INSERT INTO orders VALUES (1, 1, 10.00);
INSERT INTO order_lines VALUES (1, 1, 'sku-1'), (1, 2, 'sku-2');
UPDATE orders SET total = 20.00 WHERE id = 1;
COMMIT;
BEGIN;
INSERT INTO orders VALUES (2, 1, 5.00);
SAVEPOINT s1;
INSERT INTO order_lines VALUES (2, 1, 'rolled-back');
ROLLBACK TO SAVEPOINT s1;
INSERT INTO order_lines VALUES (2, 1, 'kept');
SAVEPOINT s2;
UPDATE customers SET name = 'Ada L.' WHERE id = 1;
RELEASE SAVEPOINT s2;
COMMIT;
BEGIN;
INSERT INTO orders VALUES (3, 1, 1.00);
ROLLBACK;
ALTER TABLE customers ADD COLUMN email varchar(40);
INSERT INTO customers VALUES (2, 'Bob', 'bob@example.com');
DELETE FROM order_lines WHERE order_id = 1;
