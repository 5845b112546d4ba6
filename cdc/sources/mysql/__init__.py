"""MySQL / MariaDB source (binlog). So far: the schema side (DDL -> tableChanges, types)."""
