-- pg_defaults (which see) in other modes: decimals as strings, binary as base64, intervals as
-- strings, Kafka Connect's temporal types.
-- @@property decimal.handling.mode=string
-- @@property binary.handling.mode=base64
-- @@property interval.handling.mode=string
-- @@property time.precision.mode=connect
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE dflt (
  id int PRIMARY KEY,
  i2 smallint NOT NULL DEFAULT (CASE WHEN random() < 2 THEN 2 END),
  i4 int NOT NULL DEFAULT (length('four')),
  i8 bigint NOT NULL DEFAULT (CASE WHEN random() < 2 THEN 8 END),
  f4 real NOT NULL DEFAULT (random()),
  f8 double precision NOT NULL DEFAULT (random()),
  n82 numeric(8,2) NOT NULL DEFAULT (CASE WHEN random() < 2 THEN 1.25 END),
  nfree numeric NOT NULL DEFAULT (CASE WHEN random() < 2 THEN 3.5 END),
  m money NOT NULL DEFAULT (CASE WHEN random() < 2 THEN 4.5::money END),
  b bool NOT NULL DEFAULT (random() < 2),
  t text NOT NULL DEFAULT md5('x'),
  vc varchar(40) NOT NULL DEFAULT md5('y'),
  ch char(3) NOT NULL DEFAULT (substr(md5('z'), 1, 3)),
  by bytea NOT NULL DEFAULT decode(md5('w'), 'hex'),
  d date NOT NULL DEFAULT CURRENT_DATE,
  tm time NOT NULL DEFAULT LOCALTIME,
  ttz timetz NOT NULL DEFAULT CURRENT_TIME,
  ts timestamp NOT NULL DEFAULT LOCALTIMESTAMP,
  tstz timestamptz NOT NULL DEFAULT now(),
  iv interval NOT NULL DEFAULT (now() - now()),
  u uuid NOT NULL DEFAULT gen_random_uuid(),
  j json NOT NULL DEFAULT json_build_object('a', 1),
  jb jsonb NOT NULL DEFAULT jsonb_build_object('b', 2),
  x xml NOT NULL DEFAULT xmlelement(name e),
  ip inet NOT NULL DEFAULT COALESCE(inet_client_addr(), '127.0.0.1'::inet),
  cid cidr NOT NULL DEFAULT (CASE WHEN random() < 2 THEN '10.0.0.0/8'::cidr END),
  mac macaddr NOT NULL DEFAULT (CASE WHEN random() < 2 THEN '08:00:2b:01:02:03'::macaddr END),
  ai int[] NOT NULL DEFAULT ARRAY[length('a'), 2],
  at text[] NOT NULL DEFAULT ARRAY[md5('a')],
  mo mood NOT NULL DEFAULT (CASE WHEN random() < 2 THEN 'ok'::mood END),
  bt bit(3) NOT NULL DEFAULT (CASE WHEN random() < 2 THEN B'101' END),
  vb varbit(8) NOT NULL DEFAULT (CASE WHEN random() < 2 THEN B'11' END),
  tsv tsvector NOT NULL DEFAULT to_tsvector('simple', 'a b'),
  nullable_ts timestamptz DEFAULT now(),
  nullable_u uuid DEFAULT gen_random_uuid(),
  n_fn numeric(8,2) NOT NULL DEFAULT (random() * 10),
  b1 bit(1) NOT NULL DEFAULT (CASE WHEN random() < 2 THEN B'1' END),
  lit_neg int NOT NULL DEFAULT -5,
  lit_negn numeric(6,2) NOT NULL DEFAULT -1.5,
  lit_q text NOT NULL DEFAULT 'it''s',
  lit_b bool NOT NULL DEFAULT true,
  lit_null int DEFAULT NULL,
  lit_ts timestamptz NOT NULL DEFAULT '2024-01-02 03:04:05+00',
  lit_mo mood NOT NULL DEFAULT 'happy',
  lit_u uuid NOT NULL DEFAULT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'
);
-- @@CAPTURE
-- the columns whose defaults vary from run to run get values; the others take their defaults
INSERT INTO dflt (id, f4, f8, d, tm, ttz, ts, tstz, u, nullable_ts, nullable_u, n_fn) VALUES (1, 0.5, 0.25, '2024-01-01', '10:11:12', '10:11:12+02', '2024-01-01 10:11:12', '2024-01-01 10:11:12+00', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-02-02 00:00:00+00', 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 7.5), (2, 0.5, 0.25, '2024-01-01', '10:11:12', '10:11:12+02', '2024-01-01 10:11:12', '2024-01-01 10:11:12+00', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '2024-02-02 00:00:00+00', 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', 7.5);
-- @@SLEEP 0.4
-- @@STEP
UPDATE dflt SET i4 = 44 WHERE id = 1;
-- @@SLEEP 0.4
-- @@STEP
DELETE FROM dflt WHERE id = 2;
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE dflt ADD COLUMN placed_at timestamptz NOT NULL DEFAULT now();
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE dflt ADD COLUMN ref uuid NOT NULL DEFAULT gen_random_uuid();
-- @@SLEEP 0.4
-- @@STEP
ALTER TABLE dflt ADD COLUMN doc jsonb NOT NULL DEFAULT jsonb_build_object();
-- @@SLEEP 0.4
-- @@STEP
INSERT INTO dflt (id, f4, f8, d, tm, ttz, ts, tstz, u, nullable_ts, nullable_u, n_fn, placed_at, ref) VALUES (3, 0.5, 0.25, '2024-01-01', '10:11:12', '10:11:12+02', '2024-01-01 10:11:12', '2024-01-01 10:11:12+00', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', '2024-02-02 00:00:00+00', 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13', 7.5, '2024-03-03 00:00:00+00', 'd0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
-- @@SLEEP 0.4
-- @@STEP
DELETE FROM dflt WHERE id = 1;
