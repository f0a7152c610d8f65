-- The reference data plane (docs/decisions.md §18): sources, their staged items, runs, and generations.
-- The host's own tables, beside keyhook's in the same file; keyhook never reads them.
-- Timestamps are BIGINT milliseconds since the epoch (read as numbers by the staging pool). Every row carries its tenant.

CREATE TABLE staging_sources (
  id                 TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  tenant_id          TEXT COLLATE "C" NOT NULL,
  name               TEXT    NOT NULL,
  description        TEXT,
  status             TEXT    NOT NULL CHECK (status IN ('active', 'inactive')),
  -- The generation readers see; 0 before the first apply.
  active_generation  BIGINT  NOT NULL DEFAULT 0 CHECK (active_generation >= 0),
  -- Moves with every item write that changed something; a run pins the value it started at.
  staged_revision    BIGINT  NOT NULL DEFAULT 0 CHECK (staged_revision >= 0),
  -- At most one apply per source: the run whose apply holds it.
  applying_run_id    TEXT,
  created_at         BIGINT  NOT NULL,
  updated_at         BIGINT  NOT NULL
);
CREATE INDEX staging_sources_tenant ON staging_sources (tenant_id, id);

-- Item content by its hash, so a run's pinned set and a generation refer to content without
-- copying it; identical items share one row.
CREATE TABLE staging_blobs (
  tenant_id  TEXT NOT NULL,
  hash       TEXT NOT NULL,
  title      TEXT,
  content    TEXT NOT NULL,
  url        TEXT,
  metadata   TEXT,
  PRIMARY KEY (tenant_id, hash)
);

-- The staged set: what the next run will see.
CREATE TABLE staging_items (
  tenant_id     TEXT COLLATE "C" NOT NULL,
  source_id     TEXT COLLATE "C" NOT NULL,
  key           TEXT COLLATE "C" NOT NULL,
  content_hash  TEXT    NOT NULL,
  created_at    BIGINT  NOT NULL,
  updated_at    BIGINT  NOT NULL,
  PRIMARY KEY (source_id, key)
);

CREATE TABLE staging_runs (
  id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  tenant_id        TEXT COLLATE "C" NOT NULL,
  source_id        TEXT COLLATE "C" NOT NULL,
  status           TEXT    NOT NULL CHECK (status IN
                     ('queued', 'running', 'completed', 'failed', 'conflict', 'applying', 'applied', 'apply_failed')),
  base_generation  BIGINT  NOT NULL,
  staged_revision  BIGINT  NOT NULL,
  added            BIGINT ,
  updated          BIGINT ,
  removed          BIGINT ,
  unchanged        BIGINT ,
  noop             BIGINT  CHECK (noop IN (0, 1)),
  generation       BIGINT ,
  reason           TEXT,
  -- When a job took the run (discovery or apply): a job that died is taken again after a while.
  claimed_at       BIGINT ,
  created_at       BIGINT  NOT NULL,
  updated_at       BIGINT  NOT NULL
);
CREATE INDEX staging_runs_source ON staging_runs (source_id, id);
CREATE INDEX staging_runs_pending ON staging_runs (status, claimed_at)
  WHERE status IN ('queued', 'running', 'applying');

-- A run's item set, pinned when it started: later item writes do not change it.
CREATE TABLE staging_run_items (
  run_id        TEXT COLLATE "C" NOT NULL,
  key           TEXT COLLATE "C" NOT NULL,
  content_hash  TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);

-- What discovery found: every pinned key and every key of the base generation, once.
CREATE TABLE staging_run_changes (
  run_id         TEXT COLLATE "C" NOT NULL,
  key            TEXT COLLATE "C" NOT NULL,
  change         TEXT NOT NULL CHECK (change IN ('added', 'updated', 'removed', 'unchanged')),
  content_hash   TEXT,
  previous_hash  TEXT,
  PRIMARY KEY (run_id, key)
);
CREATE INDEX staging_run_changes_change ON staging_run_changes (run_id, change, key);

-- Published generations: immutable once written.
CREATE TABLE staging_generations (
  source_id      TEXT COLLATE "C" NOT NULL,
  number         BIGINT  NOT NULL CHECK (number >= 1),
  tenant_id      TEXT COLLATE "C" NOT NULL,
  run_id         TEXT COLLATE "C" NOT NULL,
  item_count     BIGINT  NOT NULL,
  passage_count  BIGINT  NOT NULL,
  created_at     BIGINT  NOT NULL,
  PRIMARY KEY (source_id, number)
);

CREATE TABLE staging_generation_items (
  source_id     TEXT COLLATE "C" NOT NULL,
  generation    BIGINT  NOT NULL,
  key           TEXT COLLATE "C" NOT NULL,
  content_hash  TEXT    NOT NULL,
  PRIMARY KEY (source_id, generation, key)
);

-- A generation's items cut into passages for a chatbot to index.
CREATE TABLE staging_passages (
  source_id   TEXT COLLATE "C" NOT NULL,
  generation  BIGINT  NOT NULL,
  key         TEXT COLLATE "C" NOT NULL,
  seq         BIGINT  NOT NULL,
  text        TEXT    NOT NULL,
  PRIMARY KEY (source_id, generation, key, seq)
);

-- What keeps content alive: the prune after an apply looks a hash up in each.
CREATE INDEX staging_items_content ON staging_items (tenant_id, content_hash);
CREATE INDEX staging_run_items_content ON staging_run_items (content_hash);
CREATE INDEX staging_generation_items_content ON staging_generation_items (content_hash);
