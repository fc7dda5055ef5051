"""The job service on SQLite and PostgreSQL: a request is validated field by field before it is
stored (dataset through the real validator, gate and held-out suite, caps, base model), stored in
canonical form with its hash; approval is human-only, bound to the hash and fails closed (expired,
cancelled, rejected, racing, tampered); an agent cancels only its own job."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from sqlalchemy import update

from agent_rl_sandbox.schemas.jobs import JobSpec, TrainingCancelInput, TrainingListInput, TrainingStatusInput
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.jobs import canonical_spec, file_sha256, spec_hash
from agent_rl_sandbox.tools.store._schema import jobs as jobs_table

A, B = Caller.agent("mcp:agent-a"), Caller.agent("mcp:agent-b")
GOOD_ROW = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


@pytest.fixture
def data_dir(tmp_path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    (d / "good.jsonl").write_text(json.dumps(GOOD_ROW) + "\n" + json.dumps(GOOD_ROW) + "\n")
    (d / "bad.jsonl").write_text(json.dumps(GOOD_ROW) + "\n" + '{"foo": 1}\n' + "not json\n")
    return d


@pytest.fixture
def svc(tmp_path, store_url, data_dir):
    s = Services.build(
        Settings(
            home=tmp_path / "home",
            database_url=store_url,
            data_dirs=(data_dir,),
            models=("tiny-model",),
            job_max_steps=1000,
            job_max_timeout_s=7200,
            job_max_gpu_hours=2.0,
        )  # fmt: skip
    )
    yield s
    s.close()


def spec(data_dir: Path, **changes) -> JobSpec:
    doc = {
        "route": "sft",
        "trainer": "sft",
        "base_model": "tiny-model",
        "dataset": {"kind": "file", "path": str(data_dir / "good.jsonl")},
        "gate": {"name": "deploy", "behaviour": "claim-before-edit"},
        "reason": "teach claiming",
    }
    doc.update(changes)
    return JobSpec.model_validate(doc)


def test_a_valid_request_is_stored_canonical_hashed_and_awaiting_approval(svc, data_dir):
    out = svc.jobs.request(spec(data_dir))
    job = svc.jobs.repo.get(out.job.job_id)
    sha = file_sha256(data_dir / "good.jsonl")
    assert job.state == "awaiting_approval" and job.requester == "operator"
    assert job.spec["dataset"] == {"kind": "file", "path": str(data_dir / "good.jsonl"), "sha256": sha}
    assert job.spec_hash == spec_hash(job.spec) == out.job.spec_hash
    assert job.spec == canonical_spec(spec(data_dir), cwd=Path.cwd(), dataset_sha256=sha)
    assert out.dataset_validation["verdict"] == "valid" and out.dataset_validation["rows"] == 2
    assert job.validation == out.dataset_validation
    assert "jobs approve" in out.next_step and job.spec_hash in out.next_step
    hours = (
        __import__("datetime").datetime.fromisoformat(job.expires_at.rstrip("Z"))
        - __import__("datetime").datetime.fromisoformat(job.created_at.rstrip("Z"))
    ).total_seconds() / 3600
    assert 71.99 < hours < 72.01  # the default expiry


@pytest.mark.parametrize(
    ("changes", "field", "needle"),
    [
        ({"base_model": "gpt-unknown"}, "base_model", "AGENT_RL_SANDBOX_MODELS"),
        ({"base_model": "/definitely/not/a/folder"}, "base_model", "model registry"),
        ({"gate": {"name": "nope", "behaviour": "claim-before-edit"}}, "gate.name", "deploy"),
        ({"gate": {"name": "deploy", "behaviour": "no-such-behaviour"}}, "gate.behaviour", "unknown behaviour"),
        ({"caps": {"max_steps": 1001}}, "caps.max_steps", "at most 1000"),
        ({"caps": {"timeout_s": 7201}}, "caps.timeout_s", "at most 7200"),
        ({"caps": {"max_gpu_hours": 2.5}}, "caps.max_gpu_hours", "at most 2.0"),
        ({"dataset": {"kind": "file", "path": "/etc/passwd"}}, "dataset.path", "outside the folders"),
        ({"dataset": {"kind": "file", "path": "DATA/missing.jsonl"}}, "dataset.path", "not a file"),
        (
            {"dataset": {"kind": "file", "path": "DATA/good.jsonl", "sha256": "0" * 64}},
            "dataset.sha256",
            "drop dataset.sha256",
        ),
        ({"dataset": {"kind": "store", "export": "sft", "behaviour": "nope"}}, "dataset.behaviour", "list_tasks"),
    ],
)
def test_a_bad_spec_names_the_field_and_what_to_do(svc, data_dir, changes, field, needle):
    changes = json.loads(json.dumps(changes))  # the parameters are shared between the two databases
    if "dataset" in changes and "path" in changes["dataset"]:
        changes["dataset"]["path"] = changes["dataset"]["path"].replace("DATA", str(data_dir))
    with pytest.raises(ActionError) as e:
        svc.jobs.request(spec(data_dir, **changes))
    text = e.value.agent_text()
    assert f"field `{field}`" in text and "Next step:" in text and needle in text, text
    assert svc.jobs.repo.list() == ([], 0)  # nothing stored


def test_dataset_errors_block_the_request_with_the_report_path(svc, data_dir):
    with pytest.raises(ActionError) as e:
        svc.jobs.request(spec(data_dir, dataset={"kind": "file", "path": str(data_dir / "bad.jsonl")}))
    text = e.value.agent_text()
    assert "field `dataset.path`" in text and "error(s)" in text and "full report: " in text
    report = text.split("full report: ")[1].split(")")[0]
    assert Path(report).is_file() and Path(report).read_text().strip()
    assert svc.jobs.repo.list() == ([], 0)


def test_a_behaviour_without_heldout_variants_has_no_suite(tmp_path, store_url, data_dir):
    import shutil

    import agent_rl_sandbox.tasks as builtin

    src = Path(builtin.__file__).parent / "claim-before-edit" / "heldout-1"
    task = tmp_path / "tasks" / "lonely"
    shutil.copytree(src, task)
    toml = (task / "task.toml").read_text()
    toml = toml.replace('id = "claim-before-edit/heldout-1"', 'id = "lonely"')
    toml = toml.replace('behaviour = "claim-before-edit"', 'behaviour = "lonely-behaviour"')
    (task / "task.toml").write_text(toml.replace('split = "heldout"', 'split = "train"'))
    s = Services.build(
        Settings(
            home=tmp_path / "h",
            database_url=store_url,
            data_dirs=(data_dir,),
            models=("tiny-model",),
            task_dirs=(tmp_path / "tasks",),
        )  # fmt: skip
    )
    try:
        assert s.sandbox.tasks["lonely"].config.behaviour == "lonely-behaviour", s.sandbox.task_problems
        with pytest.raises(ActionError, match="no held-out variants") as e:
            s.jobs.request(spec(data_dir, gate={"behaviour": "lonely-behaviour"}))
        assert "field `gate.behaviour`" in e.value.agent_text()
    finally:
        s.close()


def test_approval_is_bound_to_the_hash_and_queues_the_job(svc, data_dir):
    job = svc.jobs.request(spec(data_dir)).job
    with pytest.raises(ActionError, match="not job .* spec hash"):
        svc.jobs.approve(job.job_id, "f" * 64, "alice")
    assert svc.jobs.repo.get(job.job_id).state == "awaiting_approval"
    done = svc.jobs.approve(job.job_id, job.spec_hash.upper(), "alice", "looks fine")
    assert done.state == "queued" and done.approved_hash == job.spec_hash and done.decided_by == "alice"
    assert done.decision_note == "looks fine"
    evs = svc.jobs.events(job.job_id)
    assert [(e.from_state, e.to_state, e.actor, e.who) for e in evs[1:]] == [
        ("awaiting_approval", "approved", "human", "alice"),
        ("approved", "queued", "system", "system"),
    ]
    with pytest.raises(ActionError, match="is queued"):
        svc.jobs.approve(job.job_id, job.spec_hash, "bob")


@pytest.mark.parametrize("how", ["rejected", "cancelled", "expired"])
def test_approving_a_rejected_cancelled_or_expired_job_is_refused(svc, data_dir, how):
    job = svc.jobs.request(spec(data_dir), A).job
    if how == "rejected":
        svc.jobs.reject(job.job_id, "alice", "no")
    elif how == "cancelled":
        svc.jobs.cancel(TrainingCancelInput(job_id=job.job_id), A)
    else:
        with svc.store.engine.begin() as conn:
            conn.execute(
                update(jobs_table)
                .where(jobs_table.c.job_id == job.job_id)
                .values(expires_at="2000-01-01T00:00:00.000000Z")
            )
    with pytest.raises(ActionError, match=f"is {how}") as e:
        svc.jobs.approve(job.job_id, job.spec_hash, "alice")
    assert "new training_request" in e.value.hint
    assert svc.jobs.repo.get(job.job_id).state == how
    assert svc.jobs.repo.claim("w", 60) is None


def test_expiry_is_configurable(tmp_path, store_url, data_dir):
    s = Services.build(
        Settings(
            home=tmp_path / "h",
            database_url=store_url,
            data_dirs=(data_dir,),
            models=("tiny-model",),
            job_expiry_hours=1e-9,
        )  # fmt: skip
    )
    try:
        job = s.jobs.request(spec(data_dir)).job
        st = s.jobs.status(TrainingStatusInput(job_id=job.job_id))
        assert st.job.state == "expired" and st.events[-1].actor == "system"
    finally:
        s.close()


def test_racing_approvals_start_one_job(svc, data_dir, store_url):
    job = svc.jobs.request(spec(data_dir)).job
    others = [Services.build(svc.settings) for _ in range(6)]
    results: list[str] = []
    barrier = threading.Barrier(len(others))

    def go(s: Services, n: int) -> None:
        barrier.wait()
        try:
            s.jobs.approve(job.job_id, job.spec_hash, f"human{n}")
            results.append("approved")
        except ActionError:
            results.append("refused")

    try:
        threads = [threading.Thread(target=go, args=(s, n)) for n, s in enumerate(others)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for s in others:
            s.close()
    assert sorted(results) == ["approved"] + ["refused"] * 5
    assert [e.to_state for e in svc.jobs.events(job.job_id)].count("approved") == 1
    assert svc.jobs.repo.claim("w1", 60).job_id == job.job_id
    svc.jobs.repo.release_worker_lock("w1")
    assert svc.jobs.repo.claim("w2", 60) is None  # one job started, once


def test_a_spec_tampered_before_approval_is_refused_and_after_approval_fails_spec_changed(svc, data_dir):
    a = svc.jobs.request(spec(data_dir)).job
    b = svc.jobs.request(spec(data_dir, reason="second")).job
    with svc.store.engine.begin() as conn:
        conn.execute(update(jobs_table).where(jobs_table.c.job_id == a.job_id).values(
            spec_json=json.dumps(dict(svc.jobs.repo.get(a.job_id).spec, base_model="/models/evil"))))  # fmt: skip
    with pytest.raises(ActionError, match="no longer matches its hash"):
        svc.jobs.approve(a.job_id, a.spec_hash, "alice")
    svc.jobs.approve(b.job_id, b.spec_hash, "alice")
    with svc.store.engine.begin() as conn:
        conn.execute(update(jobs_table).where(jobs_table.c.job_id == b.job_id).values(
            spec_json=json.dumps(dict(svc.jobs.repo.get(b.job_id).spec, caps={"max_steps": 1, "timeout_s": 1, "max_gpu_hours": 99.0}))))  # fmt: skip
    assert svc.jobs.repo.claim("w1", 60) is None
    got = svc.jobs.repo.get(b.job_id)
    assert got.state == "failed" and got.reason.startswith("spec_changed")


def test_an_agent_sees_and_cancels_only_its_own_jobs(svc, data_dir):
    mine = svc.jobs.request(spec(data_dir), caller=A).job
    theirs = svc.jobs.request(spec(data_dir), caller=B).job
    listed = svc.jobs.list(TrainingListInput(), caller=A)
    assert [j.job_id for j in listed.jobs] == [mine.job_id] and listed.total == 1 and listed.next_offset is None
    assert svc.jobs.list(TrainingListInput()).total == 2  # the operator sees every job
    with pytest.raises(ActionError, match="unknown job"):
        svc.jobs.status(TrainingStatusInput(job_id=theirs.job_id), caller=A)
    with pytest.raises(ActionError, match="unknown job"):
        svc.jobs.cancel(TrainingCancelInput(job_id=theirs.job_id), caller=A)
    assert svc.jobs.repo.get(theirs.job_id).state == "awaiting_approval"
    out = svc.jobs.cancel(TrainingCancelInput(job_id=mine.job_id, reason="changed my mind"), caller=A)
    assert out.job.state == "cancelled"
    ev = svc.jobs.events(mine.job_id)[-1]
    assert (ev.actor, ev.who, ev.from_state, ev.reason) == (
        "agent",
        "mcp:agent-a",
        "awaiting_approval",
        "changed my mind",
    )
    with pytest.raises(ActionError, match="final"):
        svc.jobs.cancel(TrainingCancelInput(job_id=mine.job_id), caller=A)


def test_an_agent_cancels_its_running_job_and_the_worker_heartbeat_says_stop(svc, data_dir):
    job = svc.jobs.request(spec(data_dir), A).job
    svc.jobs.approve(job.job_id, job.spec_hash, "alice")
    assert svc.jobs.repo.claim("w1", 60).state == "running"
    out = svc.jobs.cancel(TrainingCancelInput(job_id=job.job_id), A)
    assert out.job.state == "cancelled" and "heartbeat" in out.note
    assert svc.jobs.events(job.job_id)[-1].actor == "agent"
    assert not svc.jobs.repo.heartbeat(job.job_id, "w1", 60)


def test_list_paginates_newest_first(svc, data_dir):
    ids = [svc.jobs.request(spec(data_dir, reason=f"r{n}")).job.job_id for n in range(5)]
    first = svc.jobs.list(TrainingListInput(limit=2))
    assert first.total == 5 and first.next_offset == 2 and [j.job_id for j in first.jobs] == ids[::-1][:2]
    last = svc.jobs.list(TrainingListInput(limit=2, offset=4))
    assert [j.job_id for j in last.jobs] == [ids[0]] and last.next_offset is None
    assert svc.jobs.list(TrainingListInput(state="queued")).total == 0
