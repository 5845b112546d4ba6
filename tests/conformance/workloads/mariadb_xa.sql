-- XA transactions with transaction metadata: two-phase commit, ONE PHASE, a prepared transaction
-- rolled back (its rows are in the binlog's prepared group all the same), one rolled back before
-- PREPARE (nothing logged), each followed by an ordinary transaction that must not be folded
-- into it (BEGIN/END events, total_order, data_collection_order).
-- @@property provide.transaction.metadata=true
CREATE TABLE accounts (id int PRIMARY KEY, balance int) CHARACTER SET utf8mb4;
CREATE TABLE audit (id int PRIMARY KEY, note varchar(20)) CHARACTER SET utf8mb4;
-- @@CAPTURE
XA START 'two-phase';
INSERT INTO accounts VALUES (1, 100);
INSERT INTO audit VALUES (1, 'open 1');
XA END 'two-phase';
XA PREPARE 'two-phase';
XA COMMIT 'two-phase';
BEGIN;
INSERT INTO accounts VALUES (2, 200);
INSERT INTO audit VALUES (2, 'open 2');
COMMIT;
XA START 'one-phase';
UPDATE accounts SET balance = 150 WHERE id = 1;
XA END 'one-phase';
XA COMMIT 'one-phase' ONE PHASE;
INSERT INTO accounts VALUES (3, 300);
XA START 'prepared-then-rolled-back';
INSERT INTO accounts VALUES (4, 400);
XA END 'prepared-then-rolled-back';
XA PREPARE 'prepared-then-rolled-back';
XA ROLLBACK 'prepared-then-rolled-back';
INSERT INTO audit VALUES (3, 'after rollback');
XA START 'never-prepared';
INSERT INTO accounts VALUES (5, 500);
XA END 'never-prepared';
XA ROLLBACK 'never-prepared';
BEGIN;
UPDATE accounts SET balance = 250 WHERE id = 2;
DELETE FROM audit WHERE id = 1;
COMMIT;
XA START 'x', 'branch', 7;
INSERT INTO audit VALUES (4, 'branch');
XA END 'x', 'branch', 7;
XA PREPARE 'x', 'branch', 7;
XA COMMIT 'x', 'branch', 7;
INSERT INTO accounts VALUES (6, 600);
