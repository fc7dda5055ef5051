"""``agent-rl-sandbox model init-tiny PATH [--layers N] [--hidden N] [--vocab N] [--seed N] [--force]``:
build the tiny local model (:func:`agent_rl_sandbox.trainers.tiny_model.build_tiny_model`), the base
model of the CPU demo, tests and benchmarks; nothing is downloaded.

The training stack is imported inside the command, so the light install keeps ``--help`` working
and says what to install: "needs the train extra: pip install -e '.[train]'".

Exit statuses (the package's rule): 0 built and self-checked; 1 a self-check failed (the folder is
kept for inspection); 2 bad input (impossible sizes, a non-empty PATH without ``--force``, the train
extra missing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent_rl_sandbox.cli._common import group
from agent_rl_sandbox.cli._outcome import BadInput, verdict

app = group("Local models: build the tiny no-hub model the CPU demo and tests train.")


def import_tiny_model(what: str):
    """:mod:`agent_rl_sandbox.trainers.tiny_model`, or :class:`BadInput` naming the missing packages
    of the train extra."""
    from agent_rl_sandbox.trainers import TRAIN_EXTRA_HINT, missing_train_packages

    missing = missing_train_packages()
    if missing:
        raise BadInput(f"{what} {TRAIN_EXTRA_HINT} (missing: {', '.join(missing)})", "pip install -e '.[train]'")
    from agent_rl_sandbox.trainers import tiny_model

    return tiny_model


@app.command("init-tiny")
def init_tiny(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="Folder to write the model into.")],
    layers: Annotated[int, typer.Option("--layers", metavar="N", min=1, help="Decoder layers.")] = 2,
    hidden: Annotated[int, typer.Option("--hidden", metavar="N", min=8, help="Hidden size (divisible by 4).")] = 64,
    vocab: Annotated[int, typer.Option("--vocab", metavar="N", min=259, help="BPE vocabulary target.")] = 1024,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the corpus and the weights.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty PATH.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was built as JSON.")] = False,
) -> None:
    """Build a tiny Qwen2-style model with a locally trained tokenizer and TRL's Qwen2.5 chat template."""
    tiny = import_tiny_model("model init-tiny")
    if path.exists() and not path.is_dir():
        raise BadInput(f"{path} exists and is not a folder", "choose a new folder for the model")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise BadInput(f"{path} is not empty", "choose a new folder, or pass --force to overwrite its model files")
    if hidden % 4:
        raise BadInput(f"--hidden {hidden} is not divisible by 4 (the attention heads)", "use e.g. --hidden 64")
    try:
        info = tiny.build_tiny_model(path, layers=layers, hidden=hidden, vocab=vocab, seed=seed)
    except ValueError as exc:
        raise BadInput(str(exc).split(". Next step: ")[0], "fix the sizes") from None
    except tiny.TinyModelError as exc:
        typer.echo(f"self-check failed: {exc}", err=True)
        verdict(False)
    if as_json:
        from dataclasses import asdict

        typer.echo(json.dumps(asdict(info), indent=2, sort_keys=True))
    else:
        typer.echo(
            f"tiny model in {info.path}: {info.layers} layers, hidden {info.hidden}, vocab {info.vocab_size}, "
            f"{info.parameters} parameters, chat template {info.chat_template} (trl {info.trl_version}); "
            f"self-check passed ({len(info.checks)} checks)"
        )
    verdict(True)
