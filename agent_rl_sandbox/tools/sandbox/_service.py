"""Sandbox service: the domain logic behind every ``sandbox_*`` tool.

Each public method takes a tool input model and returns its output model (``schemas.tools``), and
records the action as a step of the sandbox's trajectory with provenance ``server`` (refusals
included), so the agent never has to log what it did through a sandbox tool.

On-disk layout of one sandbox under ``<home>/sandboxes/<sandbox_id>/``::

    repo/      the working copy: the only folder commands can write
    git/       its git dir (outside the working copy, so the agent cannot rewrite history)
    verifier/  the task's tests/ copied in fresh when the episode finishes
    logs/      verifier/ (emptied before the verifier runs), agent/actions.json, command outputs
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import threading
import time
import uuid
from pathlib import Path

from agent_rl_sandbox.schemas.tools import (
    CriterionBrief,
    EvalScoreInput,
    EvalScoreOutput,
    ListTasksInput,
    ListTasksOutput,
    SandboxClaimInput,
    SandboxClaimOutput,
    SandboxExecInput,
    SandboxExecOutput,
    SandboxFinishInput,
    SandboxFinishOutput,
    SandboxReadFileInput,
    SandboxReadFileOutput,
    SandboxResetInput,
    SandboxResetOutput,
    SandboxStateInput,
    SandboxStateOutput,
    SandboxWriteFileInput,
    SandboxWriteFileOutput,
    TaskInfo,
    TrajectoryGetInput,
    TrajectoryGetOutput,
)
from agent_rl_sandbox.schemas.trajectory import Observation, ObservationResult, ToolCall
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools.errors import ActionError
from agent_rl_sandbox.tools.evals import FinalState, score_trajectory
from agent_rl_sandbox.tools.evals._actions import actions_of, covered, edited_paths
from agent_rl_sandbox.tools.sandbox._git import WorkingCopy
from agent_rl_sandbox.tools.sandbox._paths import PathRefused, resolve_inside
from agent_rl_sandbox.tools.sandbox._runner import Isolation, Mount, detect_isolation, python_mounts, run_command
from agent_rl_sandbox.tools.sandbox._task import BUILTIN_TASKS_DIR, Task, discover_tasks
from agent_rl_sandbox.tools.trajectories import TrajectoryStore, new_id

log = logging.getLogger(__name__)


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)


class SandboxService:
    """Tasks, sandboxes and their recorded trajectories.

    Thread-safe: one lock per sandbox serialises actions on the same sandbox; different sandboxes
    proceed in parallel. Raises :class:`ActionError` (with a next step) for anything an agent can fix.
    """

    def __init__(self, settings: Settings, store: TrajectoryStore | None = None):
        self.settings = settings
        settings.home.mkdir(parents=True, exist_ok=True)
        settings.sandboxes_dir.mkdir(parents=True, exist_ok=True)
        settings.reports_dir.mkdir(parents=True, exist_ok=True)
        self.store = store or TrajectoryStore(settings.db_url)
        self.tasks, self.task_problems = discover_tasks(settings.task_dirs)
        self._isolation: Isolation | None = None
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    @property
    def isolation(self) -> Isolation:
        if self._isolation is None:
            self._isolation = detect_isolation(self.settings.isolation)
        return self._isolation

    def _lock(self, sandbox_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(sandbox_id, threading.Lock())

    def _mounts(self, rw: list[Path], ro: list[Path] = ()) -> list[Mount]:
        """Mounts for one command: hide host homes (real credentials), bind the interpreter back,
        hide task folders (hidden verifiers) and the store, then bind ``ro`` and ``rw`` folders."""
        homes = [Path("/root"), Path("/home"), Path.home()]
        secret = [BUILTIN_TASKS_DIR, self.settings.home, *self.settings.task_dirs]
        mounts: list[Mount] = [("tmpfs", p.resolve()) for p in dict.fromkeys(homes)]
        mounts += python_mounts()
        mounts += [("tmpfs", p.resolve()) for p in secret]
        mounts += [("ro", p) for p in ro] + [("rw", p) for p in rw]
        return mounts

    # -- tasks ---------------------------------------------------------------------------------
    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            near = [t for t in self.tasks if task_id.split("/")[0] in t][:5]
            raise ActionError(
                f"unknown task {task_id!r}",
                f"call list_tasks to see task ids{f' (similar: {near})' if near else ''}",
            ) from None

    def list_tasks(self, inp: ListTasksInput) -> ListTasksOutput:
        """Tasks known to this server, sorted by id; malformed task folders are listed in ``problems``."""
        rows = [
            TaskInfo(id=t.id, behaviour=t.config.behaviour, split=t.config.split, description=t.config.description)
            for t in sorted(self.tasks.values(), key=lambda t: t.id)
            if (inp.behaviour is None or t.config.behaviour == inp.behaviour)
            and (inp.split is None or t.config.split == inp.split)
        ]
        cap = self.settings.max_result_items
        return ListTasksOutput(tasks=rows[:cap], total=len(rows), problems=self.task_problems[:cap])

    # -- sandbox lifecycle ---------------------------------------------------------------------
    def _dirs(self, sandbox_id: str) -> dict[str, Path]:
        root = self.settings.sandboxes_dir / sandbox_id
        return {
            "root": root,
            "repo": root / "repo",
            "git": root / "git",
            "verifier": root / "verifier",
            "logs": root / "logs",
        }

    def _open_sandbox(self, sandbox_id: str) -> tuple[dict, Task, WorkingCopy, dict[str, Path]]:
        row = self.store.sandbox(sandbox_id)
        if row["status"] != "open":
            raise ActionError(
                f"sandbox {sandbox_id} is {row['status']}",
                "call sandbox_reset with this sandbox_id to start a new episode, or with a task_id for a new sandbox",
            )
        task = self.task(row["task_id"])
        dirs = self._dirs(sandbox_id)
        return row, task, WorkingCopy(dirs["git"], dirs["repo"]), dirs

    def reset(self, inp: SandboxResetInput) -> SandboxResetOutput:
        """Create a sandbox for ``task_id`` (or return ``sandbox_id`` to its base commit) and start
        a new trajectory for the episode."""
        task = self.task(inp.task_id)
        t0 = time.perf_counter()
        if inp.sandbox_id is not None:
            row = self.store.sandbox(inp.sandbox_id)
            if row["task_id"] != task.id:
                raise ActionError(
                    f"sandbox {inp.sandbox_id} holds task {row['task_id']}, not {task.id}",
                    "omit sandbox_id to create a new sandbox for this task",
                )
            sandbox_id = inp.sandbox_id
            dirs = self._dirs(sandbox_id)
            with self._lock(sandbox_id):
                wc = WorkingCopy(dirs["git"], dirs["repo"])
                dirs["repo"].mkdir(parents=True, exist_ok=True)
                wc.reset_to(row["base_commit"])
                base_commit = row["base_commit"]
                if row["status"] == "open" and row["session_id"]:
                    self._abandon(row["session_id"])
        else:
            sandbox_id = new_id("sbx")
            dirs = self._dirs(sandbox_id)
            dirs["root"].mkdir(parents=True)
            _copy_tree(task.repo_dir, dirs["repo"])
            wc = WorkingCopy(dirs["git"], dirs["repo"])
            base_commit = wc.init_from(task.repo_dir)
        for d in ("verifier", "logs"):
            shutil.rmtree(dirs[d], ignore_errors=True)
            dirs[d].mkdir(parents=True)
        tree = wc.base_tree(base_commit)
        traj = self.store.start(
            agent={"name": inp.agent_name},
            task_id=task.id,
            behaviour=task.config.behaviour,
            split=task.config.split,
            sandbox_id=sandbox_id,
        )
        fields = dict(
            session_id=traj.session_id, status="open", isolation=self.isolation.kind, base_commit=base_commit
        )
        if inp.sandbox_id is None:
            self.store.add_sandbox(sandbox_id=sandbox_id, task_id=task.id, path=str(dirs["root"]), **fields)
        else:
            self.store.update_sandbox(sandbox_id, claims=[], **fields)
        files = sorted(wc.git("ls-files", "-z").decode().split("\0"))
        files = [f for f in files if f]
        self.store.append_steps(
            traj.session_id,
            [
                {
                    "source": "system",
                    "message": task.instruction,
                    "extra": {"event": "reset", "task_id": task.id, "base_commit": base_commit, "tree_hash": tree},
                    "state_ref": tree,
                }
            ],
        )
        cap = self.settings.max_result_items
        return SandboxResetOutput(
            sandbox_id=sandbox_id,
            session_id=traj.session_id,
            task_id=task.id,
            instruction=task.instruction,
            files=files[:cap],
            file_count=len(files),
            base_commit=base_commit,
            tree_hash=tree,
            isolation=self.isolation.detail,
            limits=task.config.limits,
            allowed_tools=task.config.tools.allowed,
            reset_ms=round((time.perf_counter() - t0) * 1000, 2),
        )

    def _abandon(self, session_id: str) -> None:
        """Close a running trajectory whose sandbox was reset mid-episode (reward 0, not passed)."""
        summary = self.store.summary(session_id)
        if summary.status == "running":
            self.store.finish(session_id, final_message=None, reward=0.0, passed=False, self_report_only=False)

    # -- recording -----------------------------------------------------------------------------
    def _record(
        self,
        session_id: str,
        tool: str,
        args: dict,
        content: str,
        *,
        outcome: str = "ok",
        exit_code: int | None = None,
        state_ref: str | None = None,
        extra: dict | None = None,
        message: str = "",
        done: bool = False,
    ) -> int:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        step = {
            "source": "agent",
            "message": message,
            "tool_calls": [ToolCall(tool_call_id=call_id, function_name=tool, arguments=args).model_dump()],
            "observation": Observation(results=[ObservationResult(source_call_id=call_id, content=content)]).model_dump(),
            "provenance": "server",
            "outcome": outcome,
            "exit_code": exit_code,
            "state_ref": state_ref,
            "extra": extra or {},
            "done": done,
        }
        return self.store.append_steps(session_id, [step])[0].step_id

    def _refuse(self, row: dict, tool: str, args: dict, err: ActionError) -> ActionError:
        self._record(row["session_id"], tool, args, f"refused: {err.message}", outcome="refused", extra={"refused": err.message})
        return err

    def _resolve(self, row: dict, tool: str, args: dict, repo: Path, path: str, *, for_write: bool) -> Path:
        try:
            return resolve_inside(repo, path, for_write=for_write)
        except PathRefused as e:
            raise self._refuse(row, tool, args, ActionError(str(e), "use a path relative to the repo root that stays inside it")) from None

    # -- actions -------------------------------------------------------------------------------
    def exec(self, inp: SandboxExecInput) -> SandboxExecOutput:
        """Run a shell command in the sandbox under its isolation and limits; records a step."""
        import re

        row, task, wc, dirs = self._open_sandbox(inp.sandbox_id)
        args = {"command": inp.command} | ({"timeout_seconds": inp.timeout_seconds} if inp.timeout_seconds else {})
        if not inp.command.strip():
            raise self._refuse(row, "sandbox_exec", args, ActionError("empty command", "pass a shell command to run"))
        for pat in task.config.tools.forbidden_command_patterns:
            if re.search(pat, inp.command):
                raise self._refuse(
                    row,
                    "sandbox_exec",
                    args,
                    ActionError(
                        f"command matches a forbidden pattern ({pat}) of task {task.id}",
                        "do not run it; explain in your final message why it is unsafe, or ask a human",
                    ),
                )
        limits = task.config.limits
        wall = min(inp.timeout_seconds or limits.wall_seconds, limits.wall_seconds, self.settings.max_exec_seconds)
        with self._lock(inp.sandbox_id):
            before = wc.snapshot()
            res = run_command(
                inp.command,
                cwd=dirs["repo"],
                limits=limits,
                isolation=self.isolation,
                credentials=task.config.credentials,
                mounts=self._mounts([dirs["repo"]]),
                wall_seconds=wall,
            )
            after = wc.snapshot()
            changed = wc.changed_between(before, after)
        cap = self.settings.max_output_bytes
        output_path = None
        if len(res.stdout) > cap or len(res.stderr) > cap or res.stdout_bytes > len(res.stdout.encode()):
            output_path = dirs["logs"] / f"exec-{uuid.uuid4().hex[:8]}.log"
            output_path.write_text(f"$ {inp.command}\n--- stdout ---\n{res.stdout}\n--- stderr ---\n{res.stderr}\n")
        stdout = res.stdout[:cap] + (f"\n[... cut; see {output_path}]" if len(res.stdout) > cap else "")
        stderr = res.stderr[:cap] + (f"\n[... cut; see {output_path}]" if len(res.stderr) > cap else "")
        if res.limit_hit:
            outcome = "limit"
        else:
            outcome = "ok" if res.exit_code == 0 else "error"
        summary = f"exit {res.exit_code}" + (f" (killed: {res.limit_hit} limit)" if res.limit_hit else "")
        obs = f"{summary}\n--- stdout ---\n{res.stdout}\n--- stderr ---\n{res.stderr}"
        step_id = self._record(
            row["session_id"],
            "sandbox_exec",
            args,
            obs,
            outcome=outcome,
            exit_code=res.exit_code,
            state_ref=after,
            extra={
                "command": inp.command,
                "duration_s": res.duration_s,
                "limit_hit": res.limit_hit,
                "stdout_bytes": res.stdout_bytes,
                "stderr_bytes": res.stderr_bytes,
                "files_changed": changed,
                "isolation": self.isolation.kind,
            },
        )
        return SandboxExecOutput(
            step_id=step_id,
            exit_code=res.exit_code,
            stdout=stdout,
            stderr=stderr,
            stdout_bytes=res.stdout_bytes,
            stderr_bytes=res.stderr_bytes,
            duration_s=res.duration_s,
            limit_hit=res.limit_hit,
            files_changed=changed[: self.settings.max_result_items],
            output_path=str(output_path) if output_path else None,
        )

    def read_file(self, inp: SandboxReadFileInput) -> SandboxReadFileOutput:
        """Read part of a file inside the sandbox (records a step)."""
        row, _task, _wc, dirs = self._open_sandbox(inp.sandbox_id)
        args = {"path": inp.path, "offset": inp.offset, "max_bytes": inp.max_bytes}
        target = self._resolve(row, "sandbox_read_file", args, dirs["repo"], inp.path, for_write=False)
        if not target.exists():
            raise self._refuse(row, "sandbox_read_file", args, ActionError(f"{inp.path}: no such file", "call sandbox_state or run `ls` to see files"))
        st = target.stat()
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse(row, "sandbox_read_file", args, ActionError(f"{inp.path}: not a regular file", "read a regular file; use sandbox_exec `ls` for folders"))
        with open(target, "rb") as f:
            f.seek(inp.offset)
            data = f.read(inp.max_bytes)
        end = inp.offset + len(data)
        truncated = end < st.st_size
        text = data.decode("utf-8", errors="replace")
        step_id = self._record(
            row["session_id"], "sandbox_read_file", args, text, extra={"paths": [inp.path], "size_bytes": st.st_size}
        )
        return SandboxReadFileOutput(
            step_id=step_id,
            path=inp.path,
            content=text,
            size_bytes=st.st_size,
            truncated=truncated,
            next_offset=end if truncated else None,
        )

    def write_file(self, inp: SandboxWriteFileInput) -> SandboxWriteFileOutput:
        """Write a whole file inside the sandbox (records a step; warns when the path is unclaimed)."""
        row, _task, wc, dirs = self._open_sandbox(inp.sandbox_id)
        args = {"path": inp.path, "content": inp.content}
        with self._lock(inp.sandbox_id):
            target = self._resolve(row, "sandbox_write_file", args, dirs["repo"], inp.path, for_write=True)
            if target.is_dir():
                raise self._refuse(row, "sandbox_write_file", args, ActionError(f"{inp.path}: is a folder", "write to a file path"))
            target.parent.mkdir(parents=True, exist_ok=True)
            data = inp.content.encode("utf-8")
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            after = wc.snapshot()
        rel = str(target.relative_to(dirs["repo"].resolve()))
        claimed = covered(rel, row["claims"])
        warning = None if claimed else f"{rel} was not claimed before this edit; claim files before editing them"
        step_id = self._record(
            row["session_id"],
            "sandbox_write_file",
            args,
            f"wrote {len(data)} bytes to {rel}" + (f" (warning: {warning})" if warning else ""),
            state_ref=after,
            extra={"paths": [rel], "files_changed": [rel], "claimed": claimed},
        )
        return SandboxWriteFileOutput(step_id=step_id, path=rel, bytes_written=len(data), claimed=claimed, warning=warning)

    def claim(self, inp: SandboxClaimInput) -> SandboxClaimOutput:
        """Claim files or folders before editing them (records a step)."""
        row, _task, _wc, dirs = self._open_sandbox(inp.sandbox_id)
        args = {"paths": inp.paths, "reason": inp.reason}
        rels = []
        for p in inp.paths:
            target = self._resolve(row, "sandbox_claim", args, dirs["repo"], p, for_write=True)
            rels.append(str(target.relative_to(dirs["repo"].resolve())))
        with self._lock(inp.sandbox_id):
            claims = list(dict.fromkeys(self.store.sandbox(inp.sandbox_id)["claims"] + rels))
            self.store.update_sandbox(inp.sandbox_id, claims=claims)
        step_id = self._record(
            row["session_id"], "sandbox_claim", {"paths": rels, "reason": inp.reason}, f"claimed {rels}", extra={"paths": rels}
        )
        return SandboxClaimOutput(step_id=step_id, claims=claims[: self.settings.max_result_items])

    def state(self, inp: SandboxStateInput) -> SandboxStateOutput:
        """Diff summary, claims, commands run, isolation and limits of a sandbox (read-only)."""
        row = self.store.sandbox(inp.sandbox_id)
        task = self.task(row["task_id"])
        dirs = self._dirs(inp.sandbox_id)
        wc = WorkingCopy(dirs["git"], dirs["repo"])
        cap = self.settings.max_result_items
        if row["status"] == "open":
            with self._lock(inp.sandbox_id):
                tree = wc.snapshot()
        else:
            traj = self.store.get(row["session_id"])
            tree = next((s.state_ref for s in reversed(traj.steps) if s.state_ref), wc.base_tree(row["base_commit"]))
        changed = wc.changed_between(wc.base_tree(row["base_commit"]), tree)
        traj = self.store.get(row["session_id"])
        commands = [a.command for a in actions_of(traj.steps) if a.kind == "command" and a.command]
        step_count = traj.step_count
        if row["status"] == "open":
            self._record(
                row["session_id"], "sandbox_state", {}, f"{len(changed)} file(s) changed: {changed[:cap]}", state_ref=tree
            )
            step_count += 1
        return SandboxStateOutput(
            sandbox_id=inp.sandbox_id,
            session_id=row["session_id"],
            task_id=row["task_id"],
            status=row["status"],
            files_changed=changed[:cap],
            diff_stat=wc.diff_stat(row["base_commit"], tree)[: self.settings.max_output_bytes],
            claims=row["claims"][:cap],
            commands_run=commands[-cap:],
            step_count=step_count,
            isolation=self.isolation.detail if row["isolation"] == self.isolation.kind else row["isolation"],
            limits=task.config.limits,
        )

    # -- finish and scoring --------------------------------------------------------------------
    def _final_state(self, row: dict, wc: WorkingCopy, final_tree: str, verifier_exit: int | None, verifier_out: str) -> FinalState:
        base_tree = wc.base_tree(row["base_commit"])
        return FinalState(
            read_file=lambda p: wc.read_blob(final_tree, p),
            base_file=lambda p: wc.read_blob(base_tree, p),
            changed_paths=tuple(wc.changed_between(base_tree, final_tree)),
            verifier_exit_code=verifier_exit,
            verifier_output=verifier_out,
        )

    def finish(self, inp: SandboxFinishInput) -> SandboxFinishOutput:
        """End the episode: record the final message, copy the hidden verifier in fresh, run it,
        score the trajectory, close it, and remove the working copy (its final tree stays in git)."""
        row, task, wc, dirs = self._open_sandbox(inp.sandbox_id)
        sid = row["session_id"]
        with self._lock(inp.sandbox_id):
            final_tree = wc.snapshot()
            self._record(
                sid, "sandbox_finish", {"message": inp.message}, "episode finished; verifier running",
                state_ref=final_tree, message=inp.message, done=True, extra={"event": "finish"},
            )
            traj = self.store.get(sid)
            base_tree = wc.base_tree(row["base_commit"])
            changed = wc.changed_between(base_tree, final_tree)
            acts = actions_of(traj.steps)
            trusted = [a for a in acts if a.provenance in ("server", "hook")]
            actions_doc = {
                "claims": [{"step_id": a.step_id, "paths": list(a.paths)} for a in trusted if a.kind == "claim" and a.outcome == "ok"],
                "edits": [{"step_id": a.step_id, "paths": list(edited_paths(a))} for a in trusted if edited_paths(a)],
                "changed_paths": changed,
            }
            # The verifier is copied in fresh and its output folder emptied first, so nothing the
            # agent wrote can become the reward.
            shutil.rmtree(dirs["verifier"], ignore_errors=True)
            _copy_tree(task.tests_dir, dirs["verifier"])
            vlogs = dirs["logs"] / "verifier"
            shutil.rmtree(vlogs, ignore_errors=True)
            vlogs.mkdir(parents=True)
            agent_logs = dirs["logs"] / "agent"
            agent_logs.mkdir(parents=True, exist_ok=True)
            actions_file = agent_logs / "actions.json"
            actions_file.write_text(json.dumps(actions_doc, indent=2, sort_keys=True))
            res = run_command(
                f"bash {dirs['verifier'] / 'test.sh'}",
                cwd=dirs["repo"],
                limits=task.config.limits,
                isolation=self.isolation,
                credentials=task.config.credentials,
                extra_env={
                    "SANDBOX_REPO": str(dirs["repo"]),
                    "VERIFIER_DIR": str(dirs["verifier"]),
                    "VERIFIER_LOGS": str(vlogs),
                    "ACTIONS_FILE": str(actions_file),
                },
                mounts=self._mounts([dirs["repo"], vlogs], [dirs["verifier"], agent_logs]),
                wall_seconds=task.config.verifier_timeout_seconds,
            )
            verifier_out = (res.stdout + res.stderr)[-self.settings.max_output_bytes :]
            verifier_exit = res.exit_code if res.limit_hit is None else None
            if res.limit_hit:
                verifier_out += f"\n[verifier killed: {res.limit_hit} limit]"
            state = self._final_state(row, wc, final_tree, verifier_exit, verifier_out)
            report = score_trajectory(traj.model_copy(update={"final_message": inp.message}), task.reward_spec, state)
            report_path = self.settings.reports_dir / f"{sid}.score.json"
            report_path.write_text(report.model_dump_json(indent=2))
            self.store.finish(
                sid,
                final_message=inp.message,
                reward=report.reward,
                passed=report.passed,
                self_report_only=report.self_report_only,
                reward_components={c.id: c.value for c in report.criteria},
                score=report.model_dump(mode="json") | {"verifier_exit_code": verifier_exit, "final_tree": final_tree},
            )
            self.store.update_sandbox(inp.sandbox_id, status="finished")
            shutil.rmtree(dirs["repo"], ignore_errors=True)
            shutil.rmtree(dirs["verifier"], ignore_errors=True)
        return SandboxFinishOutput(
            session_id=sid,
            reward=report.reward,
            passed=report.passed,
            self_report_only=report.self_report_only,
            failed_criteria=report.failed_criteria + report.error_criteria,
            criteria=[CriterionBrief(id=c.id, status=c.status, value=c.value, explanation=c.explanation) for c in report.criteria],
            verifier_exit_code=verifier_exit,
            verifier_output=verifier_out,
            report_path=str(report_path),
        )

    def eval_score(self, inp: EvalScoreInput) -> EvalScoreOutput:
        """Re-score a finished trajectory from the store and its sandbox's final git tree.

        Deterministic: the same trajectory and task give a byte-identical report. Raises
        :class:`ActionError` for running or unknown trajectories.
        """
        traj = self.store.get(inp.session_id)
        if traj.status != "finished":
            raise ActionError(f"trajectory {inp.session_id} is still running", "finish it with sandbox_finish first")
        if traj.task_id is None or traj.task_id not in self.tasks:
            raise ActionError(f"trajectory {inp.session_id} has no known task to score against", "score it with the CLI `score` and a reward spec")
        task = self.tasks[traj.task_id]
        stored = self.store.score_json(inp.session_id) or {}
        state = FinalState()
        if traj.sandbox_id and stored.get("final_tree"):
            row = self.store.sandbox(traj.sandbox_id)
            dirs = self._dirs(traj.sandbox_id)
            wc = WorkingCopy(dirs["git"], dirs["repo"])
            state = self._final_state(row, wc, stored["final_tree"], stored.get("verifier_exit_code"), "")
        report = score_trajectory(traj, task.reward_spec, state)
        path = self.settings.reports_dir / f"{inp.session_id}.score.json"
        path.write_text(report.model_dump_json(indent=2))
        return EvalScoreOutput(report=report, report_path=str(path))

    def trajectory_get(self, inp: TrajectoryGetInput) -> TrajectoryGetOutput:
        """A page of a trajectory's steps plus the path of a file holding all of it."""
        traj = self.store.get(inp.session_id)
        path = self.settings.reports_dir / f"{inp.session_id}.trajectory.json"
        path.write_text(traj.model_dump_json(indent=2, exclude_none=True))
        page = traj.steps[inp.offset : inp.offset + inp.limit]
        end = inp.offset + len(page)
        summary = self.store.summary(inp.session_id)
        return TrajectoryGetOutput(
            trajectory=summary,
            steps=page,
            total_steps=len(traj.steps),
            next_offset=end if end < len(traj.steps) else None,
            full_path=str(path),
        )
