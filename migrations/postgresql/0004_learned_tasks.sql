-- What agents called for the tasks jit compiled: the same tables as
-- migrations/0009_learned_tasks.sql (read that file for why). A team's hosts share them; each
-- task's id is a UUID its own host made, so each host's calls are counted once.

CREATE TABLE learned_tasks (
    id         text COLLATE "C" PRIMARY KEY,
    shard      text COLLATE "C" NOT NULL,
    model      text NOT NULL,
    vector     bytea NOT NULL,
    shown      text NOT NULL DEFAULT '[]',
    task_text  text,
    host       text NOT NULL DEFAULT '',
    created_at double precision NOT NULL
);

CREATE INDEX learned_tasks_by_shard ON learned_tasks(shard, model);

CREATE TABLE learned_calls (
    task_id   text COLLATE "C" NOT NULL REFERENCES learned_tasks(id) ON DELETE CASCADE,
    server    text COLLATE "C" NOT NULL,
    tool      text COLLATE "C" NOT NULL,
    ok        integer NOT NULL DEFAULT 0,
    calls     integer NOT NULL DEFAULT 0,
    called_at double precision NOT NULL,
    PRIMARY KEY (task_id, server, tool)
);

CREATE INDEX learned_calls_by_tool ON learned_calls(server, tool);
