-- A server's status as one host sees it, where that differs from the shared one:
-- the same table as migrations/0007_host_status.sql (read that file for why).

CREATE TABLE server_host_status (
    server     text COLLATE "C" NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    host       text COLLATE "C" NOT NULL,
    status     text NOT NULL
               CHECK (status IN ('unknown','connecting','connected','disconnected','error','disabled','idle')),
    last_error text,
    since      double precision NOT NULL,
    PRIMARY KEY (server, host)
);
