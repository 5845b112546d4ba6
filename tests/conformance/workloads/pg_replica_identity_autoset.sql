-- replica.identity.autoset.values: at the start the connector sets REPLICA IDENTITY FULL on public.orders (a
-- regular expression, matched ignoring case) and USING INDEX on a table without a primary key, whose key is
-- then that index's columns; updates and deletes carry the old values the new identity logs.
-- @@property replica.identity.autoset.values=public.keyless:INDEX keyless_id,PUBLIC\.O.*:FULL
CREATE TABLE keyless (id int NOT NULL, v text);
CREATE UNIQUE INDEX keyless_id ON keyless (id);
CREATE TABLE orders (id int PRIMARY KEY, v text, note text);
CREATE TABLE plain (id int PRIMARY KEY, v text);
-- @@CAPTURE
INSERT INTO orders VALUES (1, 'a', 'n');
UPDATE orders SET v = 'b' WHERE id = 1;
DELETE FROM orders WHERE id = 1;
INSERT INTO keyless VALUES (7, 'k');
UPDATE keyless SET v = 'l';
DELETE FROM keyless;
INSERT INTO plain VALUES (1, 'p');
UPDATE plain SET v = 'q';
DELETE FROM plain;
