-- The initial snapshot's table order: Debezium reads the tables in the order of table.include.list's
-- patterns, and tables one pattern matches in their creation order, which moves the snapshot's
-- first/last marks.
-- @@property snapshot.mode=initial
-- @@property table.include.list=public.b_mid,public.c_.*,public.a_alpha
CREATE TABLE c_zeta (id int PRIMARY KEY, v text);
CREATE TABLE a_alpha (id int PRIMARY KEY, v text);
CREATE TABLE b_mid (id int PRIMARY KEY, v text);
CREATE TABLE c_eta (id int PRIMARY KEY, v text);
CREATE TABLE ignored (id int PRIMARY KEY, v text);
INSERT INTO c_zeta VALUES (1, 'z1'), (2, 'z2');
INSERT INTO a_alpha VALUES (1, 'a1');
INSERT INTO b_mid VALUES (1, 'b1'), (2, 'b2');
INSERT INTO c_eta VALUES (1, 'e1');
INSERT INTO ignored VALUES (1, 'i1');
-- @@CAPTURE
INSERT INTO a_alpha VALUES (2, 'a2');
