"""Alembic migrations of the store, on SQLite and PostgreSQL.

- The head revision the fast path compares against is the script directory's head, and a database
  migrated to it matches ``_schema.metadata`` exactly (Alembic's autogenerate comparison finds nothing).
- A database created by the hand-written code (schema version "2", marked by ``ars_meta``, no
  ``alembic_version``; built here with that code's DDL verbatim) is adopted without losing or changing
  a row: trajectories, steps, sandboxes and pending hook events all read back, and the step numbering
  and retry constraints still hold.
- Concurrent first opens of one empty database (8 processes, released together) migrate it once.
"""

from __future__ import annotations

import glob
import multiprocessing as mp
import tomllib
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

import agent_rl_sandbox
from agent_rl_sandbox.tools.store import Store, StoreError
from agent_rl_sandbox.tools.store._migrations import HEAD_REVISION, MIGRATIONS_DIR, alembic_config
from agent_rl_sandbox.tools.store._schema import metadata

# The DDL `TrajectoryStore._ensure_schema` issued (metadata.create_all of schema version 2, as SQLAlchemy
# 2.0 compiles it), copied verbatim; ``{id}`` is INTEGER on SQLite and SERIAL on PostgreSQL.
V2_DDL = """
CREATE TABLE ars_meta (
	"key" VARCHAR(64) NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY ("key")
);
CREATE TABLE trajectories (
	session_id VARCHAR(64) NOT NULL,
	agent_json TEXT NOT NULL,
	task_id VARCHAR(200),
	behaviour VARCHAR(100),
	split VARCHAR(16),
	sandbox_id VARCHAR(64),
	status VARCHAR(16) NOT NULL,
	created_at VARCHAR(40) NOT NULL,
	finished_at VARCHAR(40),
	step_count INTEGER NOT NULL,
	reward FLOAT,
	passed BOOLEAN,
	self_report_only BOOLEAN,
	final_message TEXT,
	parent_session_id VARCHAR(64),
	reward_components_json TEXT,
	score_json TEXT,
	agent_name VARCHAR(200),
	external_id VARCHAR(200),
	origin VARCHAR(40),
	meta_json TEXT,
	PRIMARY KEY (session_id)
);
CREATE INDEX ix_trajectories_agent_name ON trajectories (agent_name);
CREATE INDEX ix_trajectories_behaviour ON trajectories (behaviour);
CREATE INDEX ix_trajectories_created ON trajectories (created_at);
CREATE INDEX ix_trajectories_external_id ON trajectories (external_id);
CREATE INDEX ix_trajectories_sandbox_id ON trajectories (sandbox_id);
CREATE INDEX ix_trajectories_task_id ON trajectories (task_id);
CREATE TABLE hook_pending (
	session_id VARCHAR(64) NOT NULL,
	"key" VARCHAR(200) NOT NULL,
	kind VARCHAR(16) NOT NULL,
	data_json TEXT NOT NULL,
	created_at VARCHAR(40) NOT NULL,
	updated_at VARCHAR(40) NOT NULL,
	CONSTRAINT pk_hook_pending PRIMARY KEY (session_id, "key"),
	FOREIGN KEY(session_id) REFERENCES trajectories (session_id)
);
CREATE TABLE sandboxes (
	sandbox_id VARCHAR(64) NOT NULL,
	task_id VARCHAR(200) NOT NULL,
	session_id VARCHAR(64),
	path TEXT NOT NULL,
	base_commit VARCHAR(64) NOT NULL,
	status VARCHAR(16) NOT NULL,
	isolation VARCHAR(32) NOT NULL,
	claims_json TEXT NOT NULL,
	created_at VARCHAR(40) NOT NULL,
	updated_at VARCHAR(40) NOT NULL,
	PRIMARY KEY (sandbox_id),
	FOREIGN KEY(session_id) REFERENCES trajectories (session_id)
);
CREATE TABLE steps (
	id {id} NOT NULL,
	session_id VARCHAR(64) NOT NULL,
	step_id INTEGER NOT NULL,
	client_step_id VARCHAR(200),
	provenance VARCHAR(16) NOT NULL,
	data_json TEXT NOT NULL,
	PRIMARY KEY (id),
	CONSTRAINT uq_steps_session_step UNIQUE (session_id, step_id),
	CONSTRAINT uq_steps_session_client_step UNIQUE (session_id, client_step_id),
	FOREIGN KEY(session_id) REFERENCES trajectories (session_id)
);
CREATE INDEX ix_steps_session ON steps (session_id);
"""

T0 = "2026-11-01T10:00:00.000000Z"
V2_ROWS = [
    "INSERT INTO ars_meta (\"key\", value) VALUES ('schema_version', '2')",
    "INSERT INTO trajectories (session_id, agent_json, task_id, behaviour, split, sandbox_id, status, created_at,"
    " step_count, agent_name, origin, external_id) VALUES ('traj_v2', '{\"name\": \"old-agent\"}', 'claim-before-edit',"
    f" 'claim-before-edit', 'train', 'sbx_v2', 'running', '{T0}', 2, 'old-agent', 'sandbox', NULL)",
    "INSERT INTO trajectories (session_id, agent_json, status, created_at, step_count, agent_name, origin, external_id,"
    f" reward, passed, self_report_only, final_message, reward_components_json, score_json) VALUES ('traj_done',"
    f" '{{\"name\": \"hooked\"}}', 'finished', '{T0}', 0, 'hooked', 'hook:claude-code', 'claude-code:abc', 1.0, TRUE,"
    " FALSE, 'done', '{\"c\": 1.0}', '{\"final_tree\": \"t1\"}')",
    "INSERT INTO steps (session_id, step_id, client_step_id, provenance, data_json) VALUES ('traj_v2', 1, 'c-1', 'server',"
    ' \'{"step_id":1,"timestamp":"2026-11-01T10:00:00Z","source":"system","message":"reset","provenance":"server"}\')',
    "INSERT INTO steps (session_id, step_id, client_step_id, provenance, data_json) VALUES ('traj_v2', 2, NULL, 'agent',"
    ' \'{"step_id":2,"timestamp":"2026-11-01T10:00:01Z","source":"agent","message":"thinking","provenance":"agent"}\')',
    "INSERT INTO sandboxes (sandbox_id, task_id, session_id, path, base_commit, status, isolation, claims_json,"
    f" created_at, updated_at) VALUES ('sbx_v2', 'claim-before-edit', 'traj_v2', '/tmp/sbx_v2', 'abc123', 'open',"
    f" 'bubblewrap', '[\"src/a.py\", \"docs/\"]', '{T0}', '{T0}')",
    "INSERT INTO hook_pending (session_id, \"key\", kind, data_json, created_at, updated_at) VALUES ('traj_v2',"
    f" 'tool:toolu_1', 'tool', '{{\"tool_name\": \"Bash\"}}', '{T0}', '{T0}')",
]


def _build_v2(url: str) -> None:
    engine = create_engine(url)
    ddl = V2_DDL.replace("{id}", "SERIAL" if engine.dialect.name == "postgresql" else "INTEGER")
    with engine.begin() as conn:
        for stmt in filter(None, (s.strip() for s in ddl.split(";"))):
            conn.exec_driver_sql(stmt)
        for stmt in V2_ROWS:
            conn.exec_driver_sql(stmt)
    engine.dispose()


def _versions(url: str) -> tuple[list[str], str | None]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            revs = list(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
            marker = conn.execute(text("SELECT value FROM ars_meta WHERE key = 'schema_version'")).scalar()
    finally:
        engine.dispose()
    return revs, marker


def test_head_revision_is_the_script_directory_head():
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    assert script.get_heads() == [HEAD_REVISION]


def test_a_migrated_database_matches_the_tables_module(store_url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    store = Store(store_url)
    try:
        with store.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        store.close()
    assert diff == []
    assert _versions(store_url) == ([HEAD_REVISION], "2")


def test_a_version_2_store_from_the_hand_written_code_is_adopted_without_data_loss(store_url):
    _build_v2(store_url)
    store = Store(store_url)
    try:
        assert _versions(store_url) == ([HEAD_REVISION], "2")
        t = store.trajectories
        old = t.get("traj_v2")
        assert [(s.step_id, s.message, s.provenance) for s in old.steps] == [
            (1, "reset", "server"),
            (2, "thinking", "agent"),
        ]
        assert (old.agent.name, old.task_id, old.split, old.origin, old.status) == (
            "old-agent", "claim-before-edit", "train", "sandbox", "running",
        )  # fmt: skip
        done = t.get("traj_done")
        assert (done.reward, done.passed, done.self_report_only, done.final_message) == (1.0, True, False, "done")
        assert done.reward_components == {"c": 1.0} and t.score_json("traj_done") == {"final_tree": "t1"}
        assert [s.session_id for s in t.by_external_id("claude-code:abc")] == ["traj_done"]
        sbx = store.sandboxes.get("sbx_v2")
        assert (sbx.session_id, sbx.base_commit, sbx.status, sbx.isolation, sbx.claims) == (
            "traj_v2", "abc123", "open", "bubblewrap", ("src/a.py", "docs/"),
        )  # fmt: skip
        with store.hook_events.transaction("traj_v2") as tx:
            assert tx.items() == [("tool:toolu_1", "tool", {"tool_name": "Bash"})]
        # numbering continues densely and the retry constraint still holds
        res = t.log_steps("traj_v2", [{"message": "next"}, {"message": "again", "client_step_id": "c-1"}])
        assert [s.step_id for s in res.steps] == [3, 1] and res.created == [True, False]
        assert t.summary("traj_v2").step_count == 3
    finally:
        store.close()
    Store(store_url).close()  # a second open takes the fast path and changes nothing
    assert _versions(store_url) == ([HEAD_REVISION], "2")


def test_a_database_from_a_newer_release_is_refused_untouched(store_url):
    Store(store_url).close()
    engine = create_engine(store_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(StoreError, match="revision '9999'") as e:
        Store(store_url)
    assert "upgrade agent-rl-sandbox" in e.value.hint
    assert _versions(store_url) == (["9999"], "2")


def _open(url: str, go) -> None:
    go.wait()
    Store(url).close()


def test_concurrent_first_opens_migrate_once(store_url):
    ctx = mp.get_context("fork")
    go = ctx.Event()
    procs = [ctx.Process(target=_open, args=(store_url, go)) for _ in range(8)]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    assert _versions(store_url) == ([HEAD_REVISION], "2")
    store = Store(store_url)
    try:
        s = store.trajectories.start(agent={"name": "after"})
        assert store.trajectories.log_steps(s.session_id, [{"message": "x"}]).steps[0].step_id == 1
    finally:
        store.close()


def test_migration_files_are_package_data():
    """Every non-Python file Alembic needs is matched by a ``package-data`` glob (the ``.py`` files ship
    as modules of the namespace packages ``migrations`` and ``migrations.versions``)."""
    cfg = tomllib.loads((Path(agent_rl_sandbox.__file__).parents[1] / "pyproject.toml").read_text())
    globs = cfg["tool"]["setuptools"]["package-data"]["agent_rl_sandbox"]
    root = Path(agent_rl_sandbox.__file__).parent
    needed = [p for p in MIGRATIONS_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert any(p.name == "script.py.mako" for p in needed) and any(p.parent.name == "versions" for p in needed)
    shipped = {root / m for g in globs for m in glob.glob(g, root_dir=root, recursive=True)}  # setuptools' rule
    assert [str(p.relative_to(root)) for p in needed if p not in shipped] == []
