-- DefaultRegexTopicNamingStrategy: topic.regex routes two tables to one topic (schemas named after it);
-- every key of every table gains __dbz__physicalTableIdentifier, the original topic (the key options at
-- their defaults); a keyless table gets a key of that field alone; a primary key change carries the
-- augmented keys in its headers.
-- @@property topic.naming.strategy=io.debezium.schema.DefaultRegexTopicNamingStrategy
-- @@property topic.regex=dbz\.lab\.orders_(.*)
-- @@property topic.replacement=dbz.lab.orders
CREATE TABLE orders_eu (id int PRIMARY KEY, total int);
CREATE TABLE orders_us (id int PRIMARY KEY, total int);
CREATE TABLE audit (note varchar(10)) CHARACTER SET utf8mb4;
CREATE TABLE customers (id int PRIMARY KEY, name varchar(10)) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO orders_eu VALUES (1, 10);
INSERT INTO orders_us VALUES (1, 20);
INSERT INTO audit VALUES ('x');
INSERT INTO customers VALUES (1, 'Ada');
UPDATE orders_eu SET id = 2 WHERE id = 1;
DELETE FROM orders_us WHERE id = 1;
