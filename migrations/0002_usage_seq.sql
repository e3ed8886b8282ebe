-- Tool calls change selection (usage feeds the policy) but nothing else about a
-- tool. Each usage row now carries the value of meta.usage_version at its last
-- change, so a reader that saw version N fetches only rows with seq > N instead
-- of re-reading every tool's state after every call (jit/compiler.py).

ALTER TABLE usage ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;

CREATE INDEX usage_by_seq ON usage(seq);
