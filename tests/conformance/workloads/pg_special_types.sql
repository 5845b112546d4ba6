-- PostgreSQL types beyond the common ones: ranges and multiranges, domains, enums, hstore,
-- citext, uuid, inet/cidr, macaddr, xml, bit and bit varying, json with unicode, bytea.
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE DOMAIN email AS citext;
CREATE DOMAIN price AS numeric(8,2);
CREATE TABLE special (
  id       int PRIMARY KEY,
  r_int    int4range,
  r_big    int8range,
  r_num    numrange,
  r_ts     tsrange,
  r_tstz   tstzrange,
  r_date   daterange,
  mr_int   int4multirange,
  d_pos    posint,
  d_email  email,
  d_price  price,
  e        mood,
  h        hstore,
  ci       citext,
  u        uuid,
  i        inet,
  c        cidr,
  mac      macaddr,
  mac8     macaddr8,
  x        xml,
  b1       bit(1),
  b8       bit(8),
  vb       bit varying(16),
  j        json,
  jb       jsonb,
  by       bytea,
  ch       char(5),
  nm       name,
  oi       oid
);
-- @@CAPTURE
SET timezone = 'UTC';
INSERT INTO special VALUES
  (1, '[1,10)', '(,100]', '[1.5,2.5]', '[2024-01-01 00:00,2024-01-02 00:00)', '[2024-01-01 00:00+00,infinity)', '[2024-01-01,2024-02-01)',
   '{[1,3),[5,7)}', 7, 'Some@Example.com', 12.5, 'happy', 'a=>1, "b c"=>NULL', 'MiXeD', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
   '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', '<a href="x">t&amp;</a>', B'1', B'10101010', B'1101',
   '{"k": "ünïcödé ✓", "n": [1, 2.5e3]}', '{"z": 1, "a": {"b": null}}', '\x00ff10', 'ab', 'a_name', 12345),
  (2, 'empty', '[,]', '(,)', '(,)', 'empty', '[2024-01-01,2024-01-01]',
   '{}', 1, 'x@y', 0, 'sad', '', '', '00000000-0000-0000-0000-000000000000',
   '::1', '2001:db8::/32', 'ff:ff:ff:ff:ff:ff', '00:00:00:00:00:00:00:00', '<empty/>', B'0', B'00000000', B'',
   '[]', '[]', '\x', '', '', 0),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- @@STEP
UPDATE special SET h = h || 'c=>3'::hstore, e = 'ok', vb = B'1111000011110000' WHERE id = 1;
DELETE FROM special WHERE id = 2;
