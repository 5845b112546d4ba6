-- The ddl text and source of schema change events for statements with comments (leading, trailing,
-- versioned), odd spacing and case (DROP and RENAME split per table, as Debezium writes them),
-- statements that change no table (views, routines, triggers, users, databases, maintenance,
-- sequences), temporary tables, IF [NOT] EXISTS on what is (not) there.
CREATE TABLE base (id int PRIMARY KEY, a int, b varchar(10)) CHARACTER SET utf8mb4;
-- @@CAPTURE
/* leading */ CREATE TABLE c1 (id int PRIMARY KEY);
# a line comment (the runner drops dash-dash comments before sending)
ALTER TABLE c1 ADD COLUMN x int;
CREATE TABLE c2 (id int PRIMARY KEY) /* trailing */;
create   table   c3 (id int primary key)   ;
CREATE TABLE c4 (id int NOT NULL, at date NOT NULL, PRIMARY KEY (id, at)) /*!50100 PARTITION BY RANGE (YEAR(at)) (PARTITION p0 VALUES LESS THAN (2025), PARTITION p1 VALUES LESS THAN MAXVALUE) */;
ALTER TABLE c1 /* middle */ ADD COLUMN y int;
CREATE TABLE c6 (id int PRIMARY KEY) /*!40100 ENGINE=InnoDB */ ROW_FORMAT=DYNAMIC /*M!100100 PAGE_CHECKSUM=1 */;
drop   table  if exists c6, nothere RESTRICT;
rename  table c2 to c8 , c3 TO c9;
INSERT INTO c1 VALUES (1, 2, 3);
CREATE TABLE IF NOT EXISTS base (id int PRIMARY KEY);
CREATE TABLE IF NOT EXISTS c5 (id int PRIMARY KEY);
CREATE TEMPORARY TABLE tmp1 (id int);
DROP TEMPORARY TABLE tmp1;
CREATE VIEW v1 AS SELECT id FROM base;
CREATE OR REPLACE VIEW v1 AS SELECT id, a FROM base;
ALTER VIEW v1 AS SELECT id FROM base;
DROP VIEW v1;
CREATE PROCEDURE p1() SELECT 1;
DROP PROCEDURE p1;
CREATE FUNCTION f1() RETURNS int DETERMINISTIC RETURN 1;
DROP FUNCTION f1;
CREATE TRIGGER tr1 BEFORE INSERT ON base FOR EACH ROW SET NEW.a = 1;
DROP TRIGGER tr1;
CREATE USER IF NOT EXISTS 'cdc_probe'@'localhost' IDENTIFIED BY 'x';
GRANT SELECT ON lab.* TO 'cdc_probe'@'localhost';
REVOKE SELECT ON lab.* FROM 'cdc_probe'@'localhost';
DROP USER 'cdc_probe'@'localhost';
CREATE DATABASE IF NOT EXISTS lab;
CREATE DATABASE IF NOT EXISTS lab_probe;
DROP DATABASE lab_probe;
ALTER DATABASE lab CHARACTER SET latin1;
OPTIMIZE TABLE base;
ANALYZE TABLE base;
REPAIR TABLE base;
CREATE SEQUENCE s1;
DROP SEQUENCE s1;
INSERT INTO base VALUES (1, 1, 'one');
