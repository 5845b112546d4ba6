-- SchemaUnicodeTopicNamingStrategy: characters Kafka refuses in topic names (and _, its escape) become
-- _uXXXX, per UTF-16 unit as Java counts them (an emoji is two); the schemas take the topic's name.
-- @@property snapshot.mode=initial
-- @@property topic.naming.strategy=io.debezium.schema.SchemaUnicodeTopicNamingStrategy
CREATE TABLE "Prix €/kg" (id int PRIMARY KEY, v text);
CREATE TABLE my_tbl (id int PRIMARY KEY);
CREATE TABLE "tä😀" (id int PRIMARY KEY);
INSERT INTO my_tbl VALUES (1);
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO "Prix €/kg" VALUES (1, 'a');
INSERT INTO my_tbl VALUES (2);
INSERT INTO "tä😀" VALUES (1);
