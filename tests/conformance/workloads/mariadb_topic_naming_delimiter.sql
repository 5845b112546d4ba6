-- Topic naming with a non-default delimiter and transaction topic (topic.delimiter, topic.transaction),
-- under SchemaTopicNamingStrategy: MySQL's table ids have no schema, so its topics are <prefix>-<table>;
-- key, value and envelope schemas are named after the topic; schema changes stay on <prefix>.
-- @@property topic.naming.strategy=io.debezium.schema.SchemaTopicNamingStrategy
-- @@property topic.delimiter=-
-- @@property provide.transaction.metadata=true
-- @@property topic.transaction=tx-events
CREATE TABLE orders (id int PRIMARY KEY, total decimal(10,2)) CHARACTER SET utf8mb4;
CREATE TABLE order_lines (order_id int, line int, sku varchar(20), PRIMARY KEY (order_id, line)) CHARACTER SET utf8mb4;
-- @@CAPTURE
BEGIN;
INSERT INTO orders VALUES (1, 10.00);
INSERT INTO order_lines VALUES (1, 1, 'sku-1');
UPDATE orders SET total = 12.00 WHERE id = 1;
COMMIT;
DELETE FROM order_lines WHERE order_id = 1;
