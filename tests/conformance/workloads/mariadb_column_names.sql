-- column.include.list, field.name.adjustment.mode=avro_unicode and schema.name.adjustment.mode=avro_unicode
-- on MariaDB: only the listed columns, names Avro rejects rewritten.
-- @@property snapshot.mode=initial
-- @@property column.include.list=lab\.people\.(id|email|my-col|1st|ünï),lab\.notes\.body
-- @@property field.name.adjustment.mode=avro_unicode
-- @@property schema.name.adjustment.mode=avro_unicode
CREATE TABLE people (id int PRIMARY KEY, email text, phone text, `my-col` int, `1st` text, `ünï` text) CHARACTER SET utf8mb4;
CREATE TABLE notes (id int PRIMARY KEY, body text, author text) CHARACTER SET utf8mb4;
CREATE TABLE `order-items` (id int PRIMARY KEY, `a.b` int) CHARACTER SET utf8mb4;
INSERT INTO people VALUES (1, 'a@x', '555', 1, 'x', 'y');
INSERT INTO notes VALUES (1, 'hello', 'A');
INSERT INTO `order-items` VALUES (1, 2);
-- @@CAPTURE
INSERT INTO people VALUES (2, 'b@x', '556', 2, 'z', 'w');
UPDATE people SET phone = '557' WHERE id = 2;
INSERT INTO notes VALUES (2, 'world', 'B');
DELETE FROM notes WHERE id = 1;
INSERT INTO `order-items` VALUES (2, 3);
