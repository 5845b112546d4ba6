-- notification.enabled.channels=sink,log without a data snapshot (snapshot.mode=no_data).
-- @@property notification.enabled.channels=sink,log
-- @@property notification.sink.topic.name=dbz_notifications
CREATE TABLE a (id int PRIMARY KEY);
INSERT INTO a VALUES (1);
-- @@CAPTURE
INSERT INTO a VALUES (2);
