-- Each learned call carries meta.learning_version at its last change: the same column as
-- migrations/0010_learned_seq.sql (read that file for why).

ALTER TABLE learned_calls ADD COLUMN seq bigint NOT NULL DEFAULT 0;

CREATE INDEX learned_calls_by_seq ON learned_calls(seq);
