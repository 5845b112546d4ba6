-- MariaDB's own and less common types: generated columns (virtual and stored), spatial types and
-- UUID. (INET4/INET6 have a test of their own: Debezium 3.5's DDL parser stops at them.)
CREATE TABLE special (
  id       int PRIMARY KEY,
  price    decimal(8,2),
  qty      int,
  total    decimal(10,2) AS (price * qty) VIRTUAL,
  label    varchar(30) AS (concat('item-', id)) STORED,
  pt       point,
  geo      geometry,
  u        uuid
);
-- @@CAPTURE
INSERT INTO special (id, price, qty, pt, geo, u) VALUES
  (1, 2.50, 4, ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('LINESTRING(0 0,1 1,2 1)'), '123e4567-e89b-12d3-a456-426655440000'),
  (2, 0, 0, ST_GeomFromText('POINT(-1.5 1e10)'), ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), '00000000-0000-0000-0000-000000000000'),
  (3, NULL, NULL, NULL, NULL, NULL);
UPDATE special SET qty = 5, u = '00000000-0000-0000-0000-000000000001' WHERE id = 1;
DELETE FROM special WHERE id = 2;
