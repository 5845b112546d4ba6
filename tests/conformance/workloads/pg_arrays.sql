-- PostgreSQL arrays: with NULL elements, empty, two-dimensional, of text with quotes, of enums,
-- numerics, dates, uuids and booleans.
CREATE TYPE color AS ENUM ('red', 'green', 'blue');
CREATE TABLE arrs (
  id      int PRIMARY KEY,
  a_int   int[],
  a_big   bigint[],
  a_text  text[],
  a_vc    varchar(10)[],
  a_num   numeric(6,2)[],
  a_bool  boolean[],
  a_date  date[],
  a_uuid  uuid[],
  a_enum  color[],
  a_2d    int[][],
  a_f8    float8[]
);
-- @@CAPTURE
INSERT INTO arrs VALUES
  (1, '{1,2,3}', '{9223372036854775807,-1}', '{"a","b c","d\"e",""}', '{x,y}', '{1.5,2.25}', '{t,f}', '{2024-01-01,1970-01-01}', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', '{red,blue}', '{{1,2},{3,4}}', '{1.5,-0.25}'),
  (2, '{1,NULL,3}', '{NULL}', '{NULL,"x"}', '{NULL}', '{NULL,1.00}', '{NULL,t}', '{NULL}', '{NULL}', '{NULL,green}', '{{1,NULL},{NULL,4}}', '{NULL,NaN}'),
  (3, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}'),
  (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (5, '{42}', '{0}', '{"NULL","null"}', '{"a,b"}', '{-9999.99}', '{f}', '{infinity}', '{00000000-0000-0000-0000-000000000000}', '{blue}', '{{5}}', '{Infinity}');
-- @@STEP
UPDATE arrs SET a_int = array_append(a_int, 99), a_enum = '{green}' WHERE id IN (1, 3);
DELETE FROM arrs WHERE id = 2;
