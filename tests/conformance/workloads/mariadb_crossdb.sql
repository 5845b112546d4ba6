-- DDL issued under USE lab that names another captured database (lab2), and the reverse under
-- USE lab2: which database keys and attributes each schema change event (source.db, databaseName,
-- the key, so the Kafka partition). RENAME TABLE with several pairs, across databases too;
-- DROP TABLE of several tables, of a missing table (IF EXISTS); index DDL (source.table); tables
-- renamed into and out of a database that is not captured (lab3); statements that change no table.
-- @@property database.include.list=lab,lab2
DROP DATABASE IF EXISTS lab2;
CREATE DATABASE lab2 CHARACTER SET utf8mb4;
CREATE TABLE mover (id int PRIMARY KEY, v varchar(10)) CHARACTER SET utf8mb4;
CREATE TABLE lab2.t2 (id int PRIMARY KEY, a int);
CREATE TABLE lab2.t3 (id int PRIMARY KEY);
CREATE TABLE ra (id int PRIMARY KEY);
CREATE TABLE rc (id int PRIMARY KEY);
CREATE TABLE re (id int PRIMARY KEY);
CREATE TABLE d1 (id int PRIMARY KEY);
CREATE TABLE lab2.d2 (id int PRIMARY KEY);
CREATE TABLE ix (id int PRIMARY KEY, a int, b int);
CREATE TABLE lab2.keyless (a int NOT NULL, b int);
CREATE TABLE sendaway (id int PRIMARY KEY);
DROP DATABASE IF EXISTS lab3;
CREATE DATABASE lab3;
CREATE TABLE lab3.comein (id int PRIMARY KEY, v int);
-- @@CAPTURE
CREATE TABLE lab2.x (id int PRIMARY KEY, name varchar(10)) CHARACTER SET utf8mb4;
INSERT INTO lab2.x VALUES (1, 'x');
RENAME TABLE mover TO lab2.mover;
INSERT INTO lab2.mover VALUES (1, 'moved');
ALTER TABLE lab2.t2 ADD COLUMN c int;
INSERT INTO lab2.t2 VALUES (1, 1, 1);
DROP TABLE lab2.t3;
RENAME TABLE ra TO rb, rc TO rd, re TO lab2.rf;
INSERT INTO rb VALUES (1);
INSERT INTO rd VALUES (1);
INSERT INTO lab2.rf VALUES (1);
RENAME TABLE rb TO rb2;
DROP TABLE IF EXISTS nothere;
DROP TABLE IF EXISTS lab2.nothere;
DROP TABLE IF EXISTS d1, lab2.d2, nothere;
CREATE INDEX ix_a ON ix (a);
CREATE UNIQUE INDEX ix_b ON ix (b);
DROP INDEX ix_a ON ix;
ALTER TABLE ix ADD INDEX ix_ab (a, b);
ALTER TABLE ix DROP INDEX ix_ab;
CREATE INDEX ix_c ON lab2.t2 (c);
DROP INDEX ix_c ON lab2.t2;
INSERT INTO ix VALUES (1, 2, 3);
ALTER TABLE lab2.t2 RENAME TO t2back;
INSERT INTO t2back VALUES (2, 2, 2);
CREATE TABLE lab2.liked LIKE ix;
INSERT INTO lab2.liked VALUES (1, 1, 1);
TRUNCATE TABLE lab2.x;
CREATE UNIQUE INDEX ux ON lab2.keyless (a);
INSERT INTO lab2.keyless VALUES (1, 1);
RENAME TABLE sendaway TO lab3.sendaway;
RENAME TABLE lab3.comein TO comein;
INSERT INTO comein VALUES (1, 1);
CREATE TABLE lab3.other (id int PRIMARY KEY);
ALTER TABLE lab3.other ADD COLUMN v int;
CREATE VIEW v AS SELECT 1 AS one;
DROP VIEW v;
ALTER DATABASE lab2 CHARACTER SET latin1;
CREATE TABLE lab2.after_alter_db (id int PRIMARY KEY, s varchar(5));
INSERT INTO lab2.after_alter_db VALUES (1, 'é');
USE lab2;
CREATE TABLE lab.from2 (id int PRIMARY KEY);
ALTER TABLE lab.from2 ADD COLUMN w int;
INSERT INTO lab.from2 VALUES (1, 1);
CREATE TABLE here2 (id int PRIMARY KEY);
DROP TABLE lab.from2, here2;
USE lab;
-- the other workloads' snapshots would take in lab2 and lab3 (Debezium reads every database)
DROP DATABASE lab2;
DROP DATABASE lab3;
