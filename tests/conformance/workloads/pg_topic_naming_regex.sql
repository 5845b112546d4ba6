-- SchemaRegexTopicNamingStrategy: topic.regex routes two tables to one topic (schemas named after it);
-- every key of every table, routed or not, gains topic.key.field.name holding topic.key.field.regex's
-- rewrite of the original topic; a keyless table gets a key of that field alone. A primary key change
-- carries the augmented keys in its headers too.
-- @@property topic.naming.strategy=io.debezium.schema.SchemaRegexTopicNamingStrategy
-- @@property topic.regex=dbz\.public\.orders_(.*)
-- @@property topic.replacement=dbz.orders
-- @@property topic.key.field.name=source_table
-- @@property topic.key.field.regex=dbz\.public\.(.*)
-- @@property topic.key.field.replacement=table_$1
CREATE TABLE orders_eu (id int PRIMARY KEY, total int);
CREATE TABLE orders_us (id int PRIMARY KEY, total int);
CREATE TABLE audit (note text);
CREATE TABLE customers (id int PRIMARY KEY, name text);
-- @@CAPTURE
INSERT INTO orders_eu VALUES (1, 10);
INSERT INTO orders_us VALUES (1, 20);
INSERT INTO audit VALUES ('x');
INSERT INTO customers VALUES (1, 'Ada');
UPDATE orders_eu SET id = 2 WHERE id = 1;
DELETE FROM orders_us WHERE id = 1;
