-- publish.via.partition.root=true: the publication cdc creates publishes the partitions' changes as the
-- partitioned table's (publish_via_partition_root), so they arrive on the root's topic, rows written through
-- the root and into a partition directly alike, and a row moved to another partition is an update of the
-- root. The initial snapshot reads the root and each partition, as Debezium's does.
-- @@property snapshot.mode=initial
-- @@property publish.via.partition.root=true
CREATE TABLE measures (id int, region text, v int, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE measures_eu PARTITION OF measures FOR VALUES IN ('eu');
CREATE TABLE measures_us PARTITION OF measures FOR VALUES IN ('us');
CREATE TABLE plain (id int PRIMARY KEY, v text);
INSERT INTO measures VALUES (1, 'eu', 10), (2, 'us', 20);
INSERT INTO plain VALUES (1, 'a');
-- @@CAPTURE
-- a transaction of its own before the first change, which is then not at the snapshot's LSN and xid (deviations.py)
CREATE TABLE wal_filler (id int);
-- @@STEP
INSERT INTO measures VALUES (3, 'eu', 30), (4, 'us', 40);
UPDATE measures SET v = 11 WHERE id = 1;
UPDATE measures SET region = 'us' WHERE id = 3;
DELETE FROM measures WHERE id = 2;
INSERT INTO measures_eu VALUES (5, 'eu', 50);
UPDATE measures_us SET v = 41 WHERE id = 4;
INSERT INTO plain VALUES (2, 'b');
