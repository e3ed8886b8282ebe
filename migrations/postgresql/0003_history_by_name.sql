-- Definitions looked up by tool name across servers: the same index as
-- migrations/0008_history_by_name.sql (read that file for why).

CREATE INDEX tool_history_by_name ON tool_history(name, server);
