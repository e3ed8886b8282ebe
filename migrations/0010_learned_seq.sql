-- Each learned call now carries the value of meta.learning_version at its last change, so the
-- compiler's memory of past tasks (jit/selection/learning.py) reads only the calls recorded
-- since it last read (seq > the version it saw) instead of the whole shard's record after
-- every call. A forget moves meta.learning_forgotten too: what a reader holds is then dropped.

ALTER TABLE learned_calls ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;

CREATE INDEX learned_calls_by_seq ON learned_calls(seq);
