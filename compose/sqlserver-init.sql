-- testDB for the SQL Server source: CDC on the database and on its tables (run by sqlcmd,
-- see the sqlserver-init service of docker-compose.yml). The customers table is the
-- reference's example; all_types holds one column of every type the source maps.
IF DB_ID(N'testDB') IS NULL CREATE DATABASE testDB;
GO
USE testDB;
GO
IF NOT EXISTS (SELECT 1 FROM sys.databases WHERE name = N'testDB' AND is_cdc_enabled = 1) EXEC sys.sp_cdc_enable_db;
GO
IF OBJECT_ID(N'dbo.customers') IS NULL
BEGIN
    CREATE TABLE dbo.customers (
        id INTEGER IDENTITY(1001,1) NOT NULL PRIMARY KEY,
        first_name VARCHAR(255) NOT NULL,
        last_name VARCHAR(255) NOT NULL,
        email VARCHAR(255) NOT NULL UNIQUE
    );
    INSERT INTO dbo.customers (first_name, last_name, email) VALUES
        ('Sally', 'Thomas', 'sally.thomas@acme.com'),
        ('George', 'Bailey', 'gbailey@foobar.com'),
        ('Edward', 'Walker', 'ed@walker.com'),
        ('Anne', 'Kretchmar', 'annek@noanswer.org');
    EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'customers',
         @role_name = NULL, @supports_net_changes = 0;
END
GO
IF OBJECT_ID(N'dbo.orders') IS NULL
BEGIN
    CREATE TABLE dbo.orders (
        id INTEGER IDENTITY(10001,1) NOT NULL PRIMARY KEY,
        order_date DATE NOT NULL,
        purchaser INTEGER NOT NULL REFERENCES dbo.customers(id),
        quantity SMALLINT NOT NULL,
        price DECIMAL(10,2) NULL
    );
    INSERT INTO dbo.orders (order_date, purchaser, quantity, price) VALUES
        ('2016-01-16', 1001, 1, 19.99), ('2016-01-17', 1002, 2, 5.50);
    EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders',
         @role_name = NULL, @supports_net_changes = 0;
END
GO
IF OBJECT_ID(N'dbo.all_types') IS NULL
BEGIN
    CREATE TABLE dbo.all_types (
        id INT NOT NULL PRIMARY KEY,
        b BIT, ti TINYINT, si SMALLINT, i INT, bi BIGINT, r REAL, f FLOAT,
        dec DECIMAL(18,4), num NUMERIC(5,0), m MONEY, sm SMALLMONEY,
        c CHAR(3), vc VARCHAR(20), t TEXT, nc NCHAR(3), nvc NVARCHAR(20), nt NTEXT, x XML,
        d DATE, tm0 TIME(0), tm3 TIME(3), tm6 TIME(6), tm7 TIME(7),
        dt DATETIME, sdt SMALLDATETIME, dt2_3 DATETIME2(3), dt2_6 DATETIME2(6), dt2_7 DATETIME2(7),
        dto DATETIMEOFFSET(7), u UNIQUEIDENTIFIER, bin BINARY(2), vb VARBINARY(10)
    );
    EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'all_types',
         @role_name = NULL, @supports_net_changes = 0;
END
GO
-- The capture job exists once a table is enabled: make it read the log every second instead of
-- every 5 (tests wait less); the new interval applies after a restart of the job.
EXEC sys.sp_cdc_change_job @job_type = N'capture', @pollinginterval = 1;
GO
EXEC sys.sp_cdc_stop_job @job_type = N'capture';
GO
EXEC sys.sp_cdc_start_job @job_type = N'capture';
GO
