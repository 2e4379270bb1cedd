"""Make a real checkpoint series: fine-tune a causal LM on an NLI task's zero-shot prompts.

No public checkpoint series (Pythia, OLMo, ...) can be downloaded on the offline
development machine, so this script makes one from a packaged model: it trains on the
prompts nlieval itself scores (the k = 0 block followed by `` {letter}``), with the loss
on the answer letter only, and saves the model at the given steps (step 0 is the model
as packaged). The folders are then an ordered ``--checkpoints`` list for ``nlieval run``.

Only the top ``--train-layers`` decoder layers (and the final norm) are trained: on a CPU
that keeps a step to a few seconds, since nothing below them needs a backward pass. The
output layer is applied only at the answer position, for the same reason.

    python scripts/finetune_checkpoints.py --model smollm2-135m --task snli --split test \\
        --steps 0,10,20,40,80 --out runs/smol-ft
    nlieval run --model runs/smol-ft/step-0000 --task snli --limit 300 \\
        --checkpoints runs/smol-ft/step-0000,runs/smol-ft/step-0010,... --out runs/smol-dyn
    nlieval dynamics runs/smol-dyn --plot docs/img/dynamics.png
    nlieval figure dynamics runs/smol-dyn runs/gemma-dyn --positions runs/positions.json \\
        --out docs/img/dynamics_tokens.png   # the two series' positions.json merged

``positions.json`` holds the training tokens (prompt tokens, padding left out) each saved
checkpoint had seen, keyed by its folder: a token axis for models whose tokenizers differ.

Training items come from ``--split`` (SNLI test here: the evaluation uses SNLI dev, so
the two never share an item).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from nlieval import data
from nlieval.backends.weights import local_hf_folder, resolve_model
from nlieval.choice.prompts import PromptBuilder, answer_letter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--task", default="snli")
    ap.add_argument("--split", default="test")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--steps", default="0,10,20,40,80", help="save after these steps")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--train-layers", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    save_at = sorted({int(s) for s in args.steps.split(",")})
    folder = local_hf_folder(resolve_model(args.model)).path
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    body = model.get_decoder()
    for p in model.parameters():
        p.requires_grad = False
    trainable = [*body.layers[-args.train_layers :], body.norm]
    params = [p for m in trainable for p in m.parameters()]
    for p in params:
        p.requires_grad = True
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)

    spec = data.get_task(args.task)
    ds = data.load_task(args.task, args.data_dir, args.split)
    builder = PromptBuilder(spec.family, ds.labels, [])
    items = [it for it in ds.items if it.label is not None]
    random.Random(args.seed).shuffle(items)
    letters = {c: tok(c, add_special_tokens=False)["input_ids"][-1] for c in builder.continuations}
    out = Path(args.out)
    log = []
    # Training tokens seen (prompt tokens without padding) at each saved checkpoint: the x
    # axis of `nlieval figure dynamics --positions`, keyed by the folder as written here.
    tokens, positions = 0, {}

    def save(step: int) -> None:
        target = out / f"step-{step:04d}"
        model.save_pretrained(target)
        tok.save_pretrained(target)
        positions[str(target)] = tokens
        print(f"saved {target}", flush=True)

    step, start = 0, time.time()
    if 0 in save_at:
        save(0)
    head = model.get_output_embeddings()
    while step < save_at[-1]:
        batch = items[step * args.batch_size : (step + 1) * args.batch_size]
        texts = [builder.build(it).text for it in batch]
        gold = torch.tensor(
            [letters[" " + answer_letter(it, ds.labels)] for it in batch], dtype=torch.long
        )
        tok.padding_side = "left"  # the answer position is the last column for every row
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        enc = tok(texts, return_tensors="pt", padding=True)
        tokens += int(enc["attention_mask"].sum())
        pos = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        hidden = body(**enc, position_ids=pos).last_hidden_state[:, -1]
        loss = torch.nn.functional.cross_entropy(head(hidden).float(), gold)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        log.append(
            {
                "step": step,
                "tokens": tokens,
                "loss": loss.item(),
                "elapsed_s": round(time.time() - start, 1),
            }
        )
        print(json.dumps(log[-1]), flush=True)
        if step in save_at:
            save(step)
    (out / "train_log.json").write_text(json.dumps(log, indent=1))
    (out / "positions.json").write_text(json.dumps(positions, indent=1))


if __name__ == "__main__":
    main()
