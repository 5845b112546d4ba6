-- DefaultUnicodeTopicNamingStrategy: characters Kafka refuses in topic names (and _, its escape) become
-- _uXXXX; the schemas take the topic's name; schema change events stay on <prefix>.
-- @@property topic.naming.strategy=io.debezium.schema.DefaultUnicodeTopicNamingStrategy
CREATE TABLE `Prix €/kg` (id int PRIMARY KEY, v varchar(10)) CHARACTER SET utf8mb4;
CREATE TABLE my_tbl (id int PRIMARY KEY) CHARACTER SET utf8mb4;
-- @@CAPTURE
INSERT INTO `Prix €/kg` VALUES (1, 'a');
INSERT INTO my_tbl VALUES (1);
ALTER TABLE my_tbl ADD COLUMN note varchar(10);
INSERT INTO my_tbl VALUES (2, 'n');
