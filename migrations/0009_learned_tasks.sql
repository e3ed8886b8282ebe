-- What agents called for the tasks jit compiled (jit/catalog/store_learning.py): one row per
-- task a call was reported for, and one row per tool called for it. A task is kept as its
-- embedding (float32 bytes of the model named beside it), not its text: the text is stored
-- only when learning.keep_task_text asks for it. A task's id is a random UUID made by the
-- host that compiled it, so two hosts of a team never share a row, and a call reported
-- twice (a retry after an outage) is still one row: (task, server, tool) is the key.

CREATE TABLE learned_tasks (
    id         TEXT PRIMARY KEY,
    shard      TEXT NOT NULL,
    model      TEXT NOT NULL,
    vector     BLOB NOT NULL,
    -- The tools the compile put in Full, as a JSON list of [server, tool].
    shown      TEXT NOT NULL DEFAULT '[]',
    task_text  TEXT,
    host       TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);

CREATE INDEX learned_tasks_by_shard ON learned_tasks(shard, model);

CREATE TABLE learned_calls (
    task_id   TEXT NOT NULL REFERENCES learned_tasks(id) ON DELETE CASCADE,
    server    TEXT NOT NULL,
    tool      TEXT NOT NULL,
    -- 1 once a call of the tool for the task succeeded; calls counts every call, for `jit usage`.
    ok        INTEGER NOT NULL DEFAULT 0,
    calls     INTEGER NOT NULL DEFAULT 0,
    called_at REAL NOT NULL,
    PRIMARY KEY (task_id, server, tool)
);

CREATE INDEX learned_calls_by_tool ON learned_calls(server, tool);
