-- Values inside arrays where Debezium is wrong and cdc gives the value a column of the element's
-- type gets: NaN inside numeric arrays (Debezium: null for the whole array), BC dates and
-- timestamps (Debezium drops the era, and reads old timestamps in the Julian calendar).
CREATE TABLE a (id int PRIMARY KEY, nums numeric[], n2 numeric(6,2)[], fl float8[], ds date[], ts timestamp[], tz timestamptz[]);
-- @@CAPTURE
INSERT INTO a VALUES (1, '{1.5,NaN}', '{1.25,NaN}', '{1.5,NaN,Infinity}', '{2024-01-01,0044-03-15 BC}', '{"2024-01-01 00:00","0044-03-15 10:00 BC"}', '{"2024-01-01 00:00+00","0044-03-15 10:00+00 BC"}');
