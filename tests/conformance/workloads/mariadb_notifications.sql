-- notification.enabled.channels=sink on MariaDB: the initial snapshot's notification records.
-- @@property snapshot.mode=initial
-- @@property notification.enabled.channels=sink
-- @@property notification.sink.topic.name=dbz_notifications
CREATE TABLE a (id int PRIMARY KEY) CHARACTER SET utf8mb4;
CREATE TABLE b (id int PRIMARY KEY) CHARACTER SET utf8mb4;
INSERT INTO a VALUES (1), (2);
INSERT INTO b VALUES (1);
-- @@CAPTURE
INSERT INTO a VALUES (3);
