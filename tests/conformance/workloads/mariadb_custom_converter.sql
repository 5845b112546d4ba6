-- converters=boolean with Debezium's TinyIntOneToBooleanConverter: TINYINT(1) columns (NOT NULL with a
-- default, nullable, unsigned) as booleans in the snapshot and the stream, a TINYINT(2) left alone, and a
-- selector that leaves one table's TINYINT(1) as it is.
-- @@property snapshot.mode=initial
-- @@property converters=boolean
-- @@property boolean.type=io.debezium.connector.binlog.converters.TinyIntOneToBooleanConverter
-- @@property boolean.selector=lab\.flags\..*
CREATE TABLE flags (id int PRIMARY KEY, active tinyint(1) NOT NULL DEFAULT 1, maybe tinyint(1), u tinyint(1) unsigned,
  two tinyint(2)) CHARACTER SET utf8mb4;
CREATE TABLE other (id int PRIMARY KEY, active tinyint(1)) CHARACTER SET utf8mb4;
INSERT INTO flags VALUES (1, 1, NULL, 0, 5);
INSERT INTO other VALUES (1, 1);
-- @@CAPTURE
INSERT INTO flags VALUES (2, 0, 1, 1, 7), (3, 2, -1, 255, 0);
UPDATE flags SET maybe = 0 WHERE id = 1;
INSERT INTO other VALUES (2, 0);
