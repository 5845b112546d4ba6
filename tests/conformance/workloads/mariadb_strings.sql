-- MariaDB text and bytes: latin1 (with cp1252 characters), utf8mb4 (emoji), utf8mb3, utf16, ucs2,
-- ascii, BINARY/VARBINARY/BLOB, CHAR padding, JSON, SET (also empty) and ENUM.
CREATE TABLE strs (
  id     int PRIMARY KEY,
  l1     varchar(20),
  l1c    char(5),
  l1t    text,
  u8     varchar(20) CHARACTER SET utf8mb4,
  u3     varchar(20) CHARACTER SET utf8mb3,
  u16    varchar(20) CHARACTER SET utf16,
  ucs    varchar(20) CHARACTER SET ucs2,
  asc1   varchar(20) CHARACTER SET ascii,
  bin    binary(4),
  vbin   varbinary(20),
  bl     blob,
  tb     tinyblob,
  lt     longtext CHARACTER SET utf8mb4,
  j      json,
  st     set('a','b','c','d'),
  en     enum('x','y','z'),
  en_u   enum('é','ü') CHARACTER SET utf8mb4
) CHARACTER SET latin1;
-- @@CAPTURE
INSERT INTO strs VALUES
  (1, 'café', 'ab', 'naïve – “quoted” €', 'emoji 😀 ✓', 'ünï', 'utf16 ✓ 😀', 'ucs2 ✓', 'plain', x'00010203', x'ff00fe', x'deadbeef', x'00',
   'long ✓', '{"a": [1, "ü", null, true], "b": {"c": 1.5}}', 'a,d', 'y', 'ü'),
  (2, '', '', '', '', '', '', '', '', x'', x'', x'', x'', '', '[]', '', 'x', 'é'),
  (3, 'trailing  ', 'x', 'tab\tnewline\n', 'back\\slash', 'quote''s', '', '', '', 'ab', 'ab', 'ab', 'ab', '', '"str"', 'b,c', 'z', NULL),
  (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE strs SET l1 = 'ÀÉÎ', st = '', u16 = 'ß' WHERE id = 1;
UPDATE strs SET st = 'a,b,c,d', j = '{"k": []}' WHERE id = 2;
DELETE FROM strs WHERE id = 3;
