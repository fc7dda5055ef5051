"""Wiring of domain services to MCP tools. No domain logic lives here.

Each tool is declared once in :data:`TOOLS` as (name, input model, output model, annotations,
the domain method that implements it, description): the method is referenced directly (e.g.
``SandboxService.reset``), so a reader can follow a tool to its code. :func:`build_server` registers them on an ``MCPServer``: the tool's
parameters are the input model's fields (flat, so agents pass ``{"sandbox_id": ..., "command":
...}``), its output schema is the output model, and an :class:`ActionError` from the domain becomes
a flagged ``ToolError`` whose text says what to do next.

Identity: every domain method that takes a ``caller`` gets the :class:`~agent_rl_sandbox.tools._caller.Caller`
of the MCP session the call arrived on (:func:`session_caller`), never anything the client sends. A
session is one run of the server's lifespan (a stdio process, one in-process ``mcp.Client``), which
draws a random token; on a stateful streamable-HTTP transport, whose lifespan is shared, the transport's
``mcp-session-id`` is mixed in. The HTTP face (``server/http.py``) passes its own ``caller_of`` (the
identity of the verified bearer token, filling the same ``Caller.owner_id``) and an ``admit`` hook that
applies that identity's quotas around each call.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import hashlib
import inspect
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, get_args

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from agent_rl_sandbox import __version__
from agent_rl_sandbox.schemas import adapters as adapters_io
from agent_rl_sandbox.schemas import jobs as jobs_io
from agent_rl_sandbox.schemas import reward as evals_io
from agent_rl_sandbox.schemas import routes as routes_io
from agent_rl_sandbox.schemas import tools as io
from agent_rl_sandbox.server._front import (
    _SESSION_TOKEN,
    INSTRUCTIONS,
    SERVER_NAME,
    next_step_middleware,
    session_lifespan,
)
from agent_rl_sandbox.server._lean_schema import lean_schema
from agent_rl_sandbox.services import Services
from agent_rl_sandbox.settings import Settings
from agent_rl_sandbox.tools._caller import Caller
from agent_rl_sandbox.tools._control import CallControl
from agent_rl_sandbox.tools.adapters import AdapterRegistry
from agent_rl_sandbox.tools.datasets import DatasetService, DatasetValidateInput, DatasetValidateOutput
from agent_rl_sandbox.tools.errors import ActionError, WouldWait
from agent_rl_sandbox.tools.evals import EvalService
from agent_rl_sandbox.tools.jobs import JobService
from agent_rl_sandbox.tools.routes import RouteService
from agent_rl_sandbox.tools.sandbox import SandboxService
from agent_rl_sandbox.tools.trajectories import TrajectoryService

log = logging.getLogger(__name__)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
IDEMPOTENT_ADDITIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
IDEMPOTENT_DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    """Short human-readable name clients show (MCP ``title``)."""
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    annotations: ToolAnnotations
    impl: Callable[[Any, Any], BaseModel]
    """The domain method that implements the tool, unbound (e.g. ``SandboxService.reset``); it is
    bound to the instance of its class held by :class:`~agent_rl_sandbox.services.Services`."""
    description: str
    slow: bool = False
    """Run in a worker thread (commands, the verifier) so the event loop stays responsive."""
    inline_first: bool = False
    """For a slow tool whose domain method takes ``nowait``: first call it on the event loop with
    ``nowait=True`` (it raises :class:`~agent_rl_sandbox.tools.errors.WouldWait`, having done nothing,
    where it would wait, e.g. for SQLite's write lock), and only then in a worker thread. Saves the
    thread hop (most of a short call's latency on a loaded machine) when nothing is contended."""


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_tasks",
        "List practice tasks",
        io.ListTasksInput,
        io.ListTasksOutput,
        READ_ONLY,
        SandboxService.list_tasks,
        "List the practice tasks (id, behaviour, split, description). Start here, then call sandbox_reset with a task id.",
    ),
    ToolSpec(
        "sandbox_reset",
        "Start or reset a sandbox",
        io.SandboxResetInput,
        io.SandboxResetOutput,
        DESTRUCTIVE,
        SandboxService.reset,
        "Create a fresh sandbox for a task (or return an existing sandbox to its base commit, discarding "
        "its changes) and start recording a new trajectory. Returns the sandbox_id (yours alone: keep it; other "
        "sessions can neither see nor use it), the instruction to follow, the files, the isolation in force and "
        "the limits.",
        slow=True,
    ),
    ToolSpec(
        "sandbox_exec",
        "Run a command in a sandbox",
        io.SandboxExecInput,
        io.SandboxExecOutput,
        DESTRUCTIVE,
        SandboxService.exec,
        "Run a shell command (bash -c) in the sandbox's repo root: no network, only the sandbox writable, "
        "time/CPU/memory/process/output limits. Returns exit code, bounded stdout/stderr, files changed. "
        "Use it to inspect and to run tests; the run is recorded as evidence. When the output is cut, "
        "sandbox_read_output pages the rest by the result's step_id. No git inside (sandbox_state gives the diff).",
        slow=True,
    ),
    ToolSpec(
        "sandbox_read_file",
        "Read a sandbox file",
        io.SandboxReadFileInput,
        io.SandboxReadFileOutput,
        READ_ONLY,
        SandboxService.read_file,
        "Read a file of the sandbox (path relative to the repo root), up to max_bytes from offset; "
        "next_offset continues a long file. Binary bytes come back base64-encoded (encoding, binary).",
    ),
    ToolSpec(
        "sandbox_read_output",
        "Page a command's kept output",
        io.SandboxReadOutputInput,
        io.SandboxReadOutputOutput,
        READ_ONLY,
        SandboxService.read_output,
        "Read the kept output of one of your sandbox_exec commands whose result was cut (output_path set), by that "
        "result's step_id, up to max_bytes from offset; next_offset continues. Answers while another command runs.",
    ),
    ToolSpec(
        "sandbox_write_file",
        "Write a sandbox file",
        io.SandboxWriteFileInput,
        io.SandboxWriteFileOutput,
        IDEMPOTENT_DESTRUCTIVE,
        SandboxService.write_file,
        "Write a whole file in the sandbox (creating folders). Claim the path with sandbox_claim first: "
        "unclaimed edits are recorded and cost reward.",
        slow=True,
    ),
    ToolSpec(
        "sandbox_claim",
        "Claim files before editing",
        io.SandboxClaimInput,
        io.SandboxClaimOutput,
        IDEMPOTENT_ADDITIVE,
        SandboxService.claim,
        "Claim files or folders before editing them. Edit only what you claimed.",
    ),
    ToolSpec(
        "sandbox_state",
        "Show a sandbox's state",
        io.SandboxStateInput,
        io.SandboxStateOutput,
        READ_ONLY,
        SandboxService.state,
        "Show a sandbox's git diff summary, changed files, claims, commands run, isolation and limits.",
        slow=True,
    ),
    ToolSpec(
        "sandbox_finish",
        "Finish the episode and score it",
        io.SandboxFinishInput,
        io.SandboxFinishOutput,
        DESTRUCTIVE,
        SandboxService.finish,
        "End the episode with your final message (say which test command you ran and its result). The "
        "hidden verifier runs, the trajectory is scored and closed, and the working copy is removed. On every "
        "task (train and held-out) only the verdict and exit code of the hidden checks are shown, never their "
        "counts, names, arguments or expected values.",
        slow=True,
    ),
    ToolSpec(
        "trajectory_get",
        "Get a trajectory",
        io.TrajectoryGetInput,
        io.TrajectoryGetOutput,
        READ_ONLY,
        TrajectoryService.get,
        "Get a trajectory's summary and a page of its steps (offset/limit); full_path holds all of it as JSON.",
    ),
    ToolSpec(
        "eval_score",
        "Score a finished trajectory",
        io.EvalScoreInput,
        io.EvalScoreOutput,
        READ_ONLY,
        SandboxService.eval_score,
        "Score a finished trajectory against its task's reward spec: reward, pass, each criterion with its "
        "explanation and evidence, and whether success was only self-reported.",
        slow=True,
    ),
    ToolSpec(
        "eval_gate",
        "Check an eval gate",
        evals_io.EvalGateInput,
        evals_io.EvalGateOutput,
        READ_ONLY,
        EvalService.gate,
        "Ask where your finished trajectories stand against a named eval gate (default: every one of them "
        "passes, no safety violation, nothing unscorable). Only your own trajectories (this session's) are "
        "aggregated; another session's session_ids are refused. Filter by session_ids, task_id, behaviour or "
        "agent_name. Returns the verdict, each threshold with the measured value, and what would change the "
        "verdict. Read-only: no tool changes a gate or promotes past it; a human does that.",
        slow=True,
    ),
    ToolSpec(
        "trajectory_start",
        "Start a self-logged trajectory",
        io.TrajectoryStartInput,
        io.TrajectoryStartOutput,
        ADDITIVE,
        TrajectoryService.start,
        "Start a trajectory you log yourself (for work outside a sandbox; sandbox_reset already starts one and "
        "records every sandbox action for you). Pass external_id to make retries safe. Steps you log are "
        "stored as self-reported (provenance agent) and never earn reward on their own.",
    ),
    ToolSpec(
        "trajectory_log_step",
        "Log trajectory steps",
        io.TrajectoryLogStepInput,
        io.TrajectoryLogStepOutput,
        IDEMPOTENT_ADDITIVE,
        TrajectoryService.log_step,
        "Append one step (step) or a batch (steps, up to 500, all or nothing) to a running trajectory. Give "
        "each step a client_step_id: a retried call returns the stored step instead of a duplicate. Tool "
        "calls need ids unique in the step, and each observation result names one of them. Secrets are "
        "replaced by [REDACTED:<type>] before storing.",
        slow=True,
        inline_first=True,
    ),
    ToolSpec(
        "trajectory_finish",
        "Finish a self-logged trajectory",
        io.TrajectoryFinishInput,
        io.TrajectoryFinishOutput,
        ADDITIVE,
        TrajectoryService.finish,
        "Close a trajectory you started with trajectory_start (it becomes immutable; correct it with a new "
        "trajectory whose parent_session_id names it). Sandbox trajectories close with sandbox_finish.",
    ),
    ToolSpec(
        "trajectory_list",
        "List trajectories",
        io.TrajectoryListInput,
        io.TrajectoryListOutput,
        READ_ONLY,
        TrajectoryService.list,
        "List trajectories newest first, filtered by task_id, behaviour, agent_name, outcome (passed, failed, "
        "unscored, running), split, origin and created_after/created_before; page with offset/next_offset. You see "
        "your own trajectories and other sessions' train ones (without their sandbox ids), never their held-out ones.",
    ),
    ToolSpec(
        "trajectory_export",
        "Export training data",
        io.TrajectoryExportInput,
        io.TrajectoryExportOutput,
        ADDITIVE,
        TrajectoryService.export,
        "Write training data from finished trajectories: sft, dpo, kto, grpo (TRL), minimind_sft, minimind_dpo, "
        "minimind_agentic, atif or suite, with a manifest (source ids, filters, counts, hash). Held-out task "
        "variants never enter a training format. Returns the data and manifest paths and what was skipped.",
        slow=True,
    ),
    ToolSpec(
        "route_recommend",
        "Recommend a training route",
        routes_io.RouteRecommendInput,
        routes_io.RouteRecommendation,
        READ_ONLY,
        RouteService.recommend,
        "Recommend how to teach a behaviour: a rule/hook, a prompt, SFT, DPO/KTO, GRPO or agentic GRPO (or distillation), "
        "LoRA/QLoRA/full, starting hyperparameters and what is still missing. Pass a behaviour or task_id to derive the "
        "evidence from finished trajectories, and/or explicit signals (base_model_params with a unit, e.g. 7B; gpu; "
        "gpu_memory_gb). Every reason names the signal and value behind it. Read-only: it requests nothing.",
        slow=True,
    ),
    ToolSpec(
        "dataset_validate",
        "Validate a dataset",
        DatasetValidateInput,
        DatasetValidateOutput,
        READ_ONLY,
        DatasetService.validate,
        "Validate post-training data before training on it: a JSONL/JSON file path or inline rows; kind detected "
        "per row (TRL, MiniMind, OpenAI chat, ATIF, trajectory suite) or forced. Returns verdict, counts by error "
        "code, the first errors with line and JSON path, a summary, and full_report_path when errors were cut.",
        slow=True,
    ),
    ToolSpec(
        "training_request",
        "Request a training run",
        jobs_io.JobSpec,
        jobs_io.TrainingRequestOutput,
        ADDITIVE,
        JobService.request,
        "Request a training run (a job spec: route, trainer, base_model, dataset file or store selection, adapter, "
        "gate with its held-out behaviour, caps, reason; route_recommend's job_spec is one). It is validated (dataset "
        "through the validator, gate and held-out suite exist, caps within the operator's limits) and stored with its "
        "spec hash as awaiting_approval. Nothing trains until a human approves that exact hash out of band; "
        "unapproved requests expire. This tool cannot approve.",
        slow=True,
    ),
    ToolSpec(
        "training_status",
        "Show a training job",
        jobs_io.TrainingStatusInput,
        jobs_io.TrainingStatusOutput,
        READ_ONLY,
        JobService.status,
        "One of your training jobs: state, stage, progress, last metrics, log files, and every state transition "
        "(time, actor, from, to, reason).",
    ),
    ToolSpec(
        "training_list",
        "List training jobs",
        jobs_io.TrainingListInput,
        jobs_io.TrainingListOutput,
        READ_ONLY,
        JobService.list,
        "Your training jobs, newest first; filter by state or behaviour; paginated (limit, offset, next_offset).",
    ),
    ToolSpec(
        "training_cancel",
        "Cancel a training job",
        jobs_io.TrainingCancelInput,
        jobs_io.TrainingCancelOutput,
        DESTRUCTIVE,
        JobService.cancel,
        "Cancel one of your own training jobs in any non-final state (a running one is stopped by its worker). "
        "Cancelling is the only change an agent can make to a job.",
    ),
    ToolSpec(
        "adapter_list",
        "List adapters",
        adapters_io.AdapterListInput,
        adapters_io.AdapterListOutput,
        READ_ONLY,
        AdapterRegistry.adapter_list,
        "Trained adapters in the registry (candidate, deployed, disabled, retired) with their job, content hash "
        "and rollback target, and which model name each behaviour is routed to now.",
    ),  # fmt: skip
    ToolSpec(
        "adapter_disable",
        "Disable an adapter (kill switch)",
        adapters_io.AdapterDisableInput,
        adapters_io.AdapterDisableOutput,
        IDEMPOTENT_DESTRUCTIVE,
        AdapterRegistry.adapter_disable,
        "Kill switch: route a behaviour back to the base model at once and mark its deployed adapter disabled. "
        "Anyone may pull it, at any time, and pulling it twice is harmless. Turning an adapter back on is a "
        "human's decision, out of band; no tool does it.",
    ),  # fmt: skip
)


def session_caller(ctx: Context) -> Caller:
    """The :class:`Caller` of the MCP session ``ctx`` belongs to: ``mcp:<session token>``, plus a
    hash of the transport's ``mcp-session-id`` where there is one. Raises ``RuntimeError`` when the
    server's lifespan did not run (no identity: fail closed rather than share one)."""
    state = ctx.request_context.lifespan_context
    token = state.get(_SESSION_TOKEN) if isinstance(state, dict) else None
    if not token:
        raise RuntimeError("no session identity: build the server with build_server (its lifespan draws one)")
    transport = (ctx.headers or {}).get("mcp-session-id")
    suffix = f":{hashlib.sha256(transport.encode()).hexdigest()[:16]}" if transport else ""
    return Caller.agent(f"mcp:{token}{suffix}")


def takes_caller(impl: Callable[..., Any]) -> bool:
    """Whether a domain method acts for a caller (has a ``caller`` parameter)."""
    return "caller" in inspect.signature(impl).parameters


def takes_control(impl: Callable[..., Any]) -> bool:
    """Whether a domain method can be cancelled and describe its progress (a ``control`` parameter)."""
    return "control" in inspect.signature(impl).parameters


PROGRESS_EVERY_S = 1.0
"""Seconds between progress notifications of a slow call (sent only when the client gave a token)."""
CANCEL_GRACE_S = 10.0
"""Seconds a cancelled call waits for its worker thread to kill the command and record the step."""


async def run_slow(ctx: Context, fn: Callable[[], BaseModel], control: CallControl, name: str) -> BaseModel:
    """Run ``fn`` in a worker thread while sending progress (elapsed seconds, of the total the
    domain expects, every :data:`PROGRESS_EVERY_S`; a no-op without a progress token) and
    watching for cancellation: when the client cancels (the SDK's dispatcher cancels this task's
    scope on ``notifications/cancelled``, its default ``interrupt`` mode), ``control`` is cancelled
    and the worker gets up to :data:`CANCEL_GRACE_S` to kill the command and record the step
    before the cancellation goes on (its result is never sent)."""
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the event loop below
            outcome["error"] = e
        finally:
            done.set()

    async def heartbeat() -> None:
        t0 = time.monotonic()
        while True:
            await anyio.sleep(PROGRESS_EVERY_S)
            total, what = control.expected()
            elapsed = round(time.monotonic() - t0, 1)
            limit = f" of at most {total:g} s" if total else ""
            try:
                await ctx.report_progress(elapsed, total, f"{what or name} running: {elapsed:g} s{limit}")
            except Exception:  # noqa: BLE001 - a progress note the transport cannot send is not the call's failure
                log.debug("progress notification for %s not sent", name, exc_info=True)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            tg.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        control.cancel()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(done.wait, CANCEL_GRACE_S)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _signature_of(model: type[BaseModel]) -> inspect.Signature:
    params = []
    for name, field in model.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        if field.default_factory is not None:  # the parameter's default carries the value instead
            field = copy.copy(field)
            field.default_factory = None
        annotation = Annotated[field.annotation, field]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return inspect.Signature(params)


CallerOf = Callable[[Context], Caller]
"""How a face names the caller of a request (default :func:`session_caller`)."""
Admit = Callable[[ToolSpec, Caller, BaseModel], AbstractContextManager[Any]]
"""A face's hook around every call of a tool that takes a caller (the HTTP face's quotas): entered
just before the domain method runs (in its worker thread for a slow tool), left when it returns; it
refuses by raising :class:`ActionError`."""


def _make_tool(
    spec: ToolSpec, impl: Callable[..., BaseModel], caller_of: CallerOf = session_caller, admit: Admit | None = None
) -> Callable[..., Any]:
    scoped = takes_caller(impl)
    controlled = takes_control(impl)

    async def tool(ctx: Context, **kwargs: Any) -> Any:
        try:
            inp = spec.input_model(**kwargs)
            args = (inp, caller_of(ctx)) if scoped else (inp,)
            run: Callable[..., BaseModel] = impl
            if admit is not None and scoped:

                def run(*a: Any, **kw: Any) -> BaseModel:
                    with admit(spec, a[1], a[0]):
                        return impl(*a, **kw)

            if spec.slow and spec.inline_first and admit is None:
                try:
                    return run(*args, nowait=True)
                except WouldWait:
                    pass  # it would have waited (a held lock, a remote database): the worker thread does
            if spec.slow:
                control = CallControl()
                bound = functools.partial(run, *args, control=control) if controlled else functools.partial(run, *args)
                return await run_slow(ctx, bound, control, spec.name)
            return run(*args)
        except ActionError as e:
            raise ToolError(e.agent_text()) from None
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            msg = first["msg"].removeprefix("Value error, ")  # a rule over several arguments names them itself
            raise ToolError(
                f"invalid argument `{where}`: {msg}. Next step: fix the argument and call again"
                if where
                else f"invalid arguments: {msg}. Next step: fix the arguments and call again"
            ) from None
        except Exception as e:  # a bug, not the agent's fault: still a flagged error with a next step
            log.exception("tool %s crashed", spec.name)
            raise ToolError(
                f"internal error in {spec.name} ({type(e).__name__}). Next step: do not retry the same call; "
                "the server log has the traceback, report it"
            ) from None

    tool.__name__ = spec.name
    tool.__doc__ = spec.description
    sig = _signature_of(spec.input_model)
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    tool.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[ctx_param, *sig.parameters.values()], return_annotation=spec.output_model
    )
    tool.__annotations__ = {"ctx": Context}  # the SDK passes the request Context to the parameter annotated so
    return tool


ARGUMENT_ALIASES: dict[str, str] = {"behavior": "behaviour"}
"""Argument names read as another (American spelling -> the field's name), wherever the field exists."""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (``M``, ``M | None``, ``list[M]``, ``Annotated``...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


@dataclass(frozen=True)
class _Shape:
    """What :func:`unknown_arguments` needs of a model, computed once per model (walking
    ``model_fields`` and the annotations on every call cost ~50 us of a ~0.5 ms call)."""

    names: frozenset[str]
    """Every key the model takes (field names, their aliases and :data:`ARGUMENT_ALIASES` onto them)."""
    sorted_names: tuple[str, ...]
    forbid: bool
    """The model forbids extra keys (checked when nested)."""
    nested: tuple[tuple[str, str, type[BaseModel]], ...]
    """``(field name, key in the data, the one model it holds)`` for fields holding exactly one model."""


@functools.cache
def _shape(model: type[BaseModel]) -> _Shape:
    fields = model.model_fields
    names = {f.alias or n for n, f in fields.items()} | set(fields)
    known = names | {alias for alias, name in ARGUMENT_ALIASES.items() if name in names}
    nested = []
    for name, field in fields.items():
        models = _models_in(field.annotation)
        if len(models) == 1:
            nested.append((name, field.alias or name, models[0]))
    return _Shape(frozenset(known), tuple(sorted(names)), model.model_config.get("extra") == "forbid", tuple(nested))


def unknown_arguments(model: type[BaseModel], data: Any, where: str = "", *, closed: bool = True) -> list[str]:
    """One sentence per key of ``data`` that no field of ``model`` takes, naming where it is
    (``steps[0].sorce``) and the closest valid name (:func:`difflib.get_close_matches`) or else
    every valid one. The top level (``closed``) is always checked; nested objects where their
    model forbids extra keys (the agent-filled inputs, e.g. a logged step). Aliases of
    :data:`ARGUMENT_ALIASES` count as known."""
    if not isinstance(data, dict):
        return []
    shape = _shape(model)
    problems = []
    if closed or shape.forbid:
        for key in data:
            if key in shape.names:
                continue
            near = difflib.get_close_matches(str(key), shape.sorted_names, n=1, cutoff=0.6)
            hint = f"did you mean `{near[0]}`?" if near else f"valid names: {', '.join(shape.sorted_names)}"
            problems.append(f"unknown argument `{where}{key}` ({hint})")
    for name, key, nested in shape.nested:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, list):
            for i, item in enumerate(value):
                problems += unknown_arguments(nested, item, f"{where}{name}[{i}].", closed=False)
        else:
            problems += unknown_arguments(nested, value, f"{where}{name}.", closed=False)
    return problems


def _with_aliases(model: type[BaseModel], args: dict[str, Any]) -> dict[str, Any] | str:
    """``args`` with :data:`ARGUMENT_ALIASES` renamed to the model's field names; a sentence
    instead when both spellings were passed."""
    out = dict(args)
    for alias, name in ARGUMENT_ALIASES.items():
        if alias in out and name in model.model_fields:
            if name in out:
                return f"both `{name}` and `{alias}` were passed (the same argument)"
            out[name] = out.pop(alias)
    return out


def closed_arguments_middleware(specs: dict[str, ToolSpec]) -> Callable[[Any, Callable[[Any], Any]], Any]:
    """Middleware for ``tools/call`` on the tools of ``specs``: an argument name no field of the
    tool's input model takes is a flagged error naming the closest valid name (the SDK would
    silently drop it: ``behaviour`` misspelled changed a gate verdict); aliases are renamed."""

    async def middleware(ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        params = getattr(ctx, "params", None)
        if getattr(ctx, "method", None) != "tools/call" or not isinstance(params, dict):
            return await call_next(ctx)
        spec = specs.get(params.get("name"))  # type: ignore[arg-type]
        args = params.get("arguments")
        if spec is None or not isinstance(args, dict):
            return await call_next(ctx)
        renamed = _with_aliases(spec.input_model, args)
        problems = [renamed] if isinstance(renamed, str) else unknown_arguments(spec.input_model, renamed)
        if problems:
            text = (
                f"{spec.name}: {'; '.join(problems[:10])}. Next step: call {spec.name} again with the argument "
                "names of its input schema (tools/list)"
            )
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        if renamed != args:
            ctx = dataclasses.replace(ctx, params={**params, "arguments": renamed})
        return await call_next(ctx)

    return middleware


def build_server(
    settings: Settings | None = None,
    services: Services | None = None,
    *,
    caller_of: CallerOf = session_caller,
    admit: Admit | None = None,
    **mcp_options: Any,
) -> MCPServer:
    """An ``MCPServer`` exposing every tool in :data:`TOOLS` over ``services`` (built from
    ``settings``, or from the environment, when not given). A face may name callers its own way
    (``caller_of``), wrap calls (``admit``) and pass ``MCPServer`` options (``token_verifier``,
    ``auth``) through ``mcp_options``."""
    services = services or Services.build(settings)
    server = MCPServer(
        name=SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        middleware=[next_step_middleware, tools_middleware()],
        lifespan=session_lifespan,
        tools=build_tools(services, caller_of=caller_of, admit=admit),
        **mcp_options,
    )
    server.services = services  # type: ignore[attr-defined]  # for tests and the CLI
    return server


class Binder(Protocol):
    """What binds a tool's unbound domain method to the instance that runs it (:meth:`Services.bind`)."""

    def bind(self, method: Callable[[Any, Any], Any]) -> Callable[[Any], Any]: ...


def build_tools(services: Binder, *, caller_of: CallerOf = session_caller, admit: Admit | None = None) -> list[Tool]:
    """The SDK ``Tool`` of every spec in :data:`TOOLS`, its domain method bound by ``services`` (what
    :func:`build_server` registers; :mod:`agent_rl_sandbox.server.lazy` registers the same on the
    first ``tools/call``). Their ``tools/list`` entries depend on the specs only, never on ``services``."""
    tools = []
    for spec in TOOLS:
        tool = Tool.from_function(
            _make_tool(spec, services.bind(spec.impl), caller_of, admit),
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=spec.annotations,
            structured_output=True,
        )
        tool.parameters["additionalProperties"] = False  # closed_arguments_middleware enforces it
        if tool.fn_metadata.output_schema is not None:  # the same instances accepted, cheaper for the client
            tool.fn_metadata.output_schema = lean_schema(tool.fn_metadata.output_schema)
        tools.append(tool)
    return tools


def tools_middleware() -> Callable[[Any, Callable[[Any], Any]], Any]:
    """The middleware that runs inside :func:`next_step_middleware` on every server built here:
    :func:`closed_arguments_middleware` over :data:`TOOLS`."""
    return closed_arguments_middleware({s.name: s for s in TOOLS})
