-- A catalog's identity, random and fixed at creation: files derived from the catalog
-- (the compiled view beside it, jit/selection/viewfile.py) name the catalog they were
-- made from, so a different catalog put at the same path never reuses them.

INSERT OR IGNORE INTO meta (key, value) VALUES ('catalog_id', lower(hex(randomblob(16))));
