#!/usr/bin/env python3
"""Regenerates the PyTorch reference fixtures that tests/model/torch_reference_test.cpp compares
tierzero's GPT against.

It asks tierzero for the initial weights of a tiny, oddly sized GPT (`tierzero train --init-out`),
builds the same model in PyTorch, loads those weights, and dumps for one fixed batch: the logits,
the loss and the gradient of every parameter; then the losses of 10 AdamW steps (warmup + cosine
learning rate, global-norm clipping, decoupled weight decay on matrices only) on that batch.

Run with Debian's PyTorch (python3-torch), from the repository root, after building:
    /usr/bin/python3 scripts/torch_reference.py --tierzero build/tierzero
Writes tests/fixtures/gpt_ref.json (config, batch, hyper-parameters, losses, a checksum of the initial
weights, the offsets of each array) and tests/fixtures/gpt_ref.bin (fp32: logits, then the gradients
in the flat-buffer order of tierzero's parameter layout).
"""
import argparse
import json
import math
import os
import subprocess
import tempfile

import torch
import torch.nn.functional as F

CONFIG = {"n_layer": 2, "n_embd": 36, "n_head": 3, "n_positions": 16, "vocab_size": 61}
B, T, SEED, STEPS = 3, 13, 7, 10
HP = {"max_lr": 1e-2, "min_lr": 1e-3, "warmup_steps": 3, "decay_steps": 10, "beta1": 0.9, "beta2": 0.95,
      "eps": 1e-8, "weight_decay": 0.1, "grad_clip": 1.0}


def lr_at(step):
    """Same schedule as src/optim/lr_schedule.cpp."""
    if step < HP["warmup_steps"]:
        return HP["max_lr"] * (step + 1) / HP["warmup_steps"]
    if step >= HP["decay_steps"]:
        return HP["min_lr"]
    r = (step - HP["warmup_steps"]) / (HP["decay_steps"] - HP["warmup_steps"])
    return HP["min_lr"] + 0.5 * (1 + math.cos(math.pi * r)) * (HP["max_lr"] - HP["min_lr"])


def forward(p, idx, targets):
    """GPT-2: embeddings, pre-LN blocks, final LN, LM head tied to wte, mean cross-entropy."""
    C, H, L = CONFIG["n_embd"], CONFIG["n_head"], CONFIG["n_layer"]
    b, t = idx.shape
    x = p["wte"][idx] + p["wpe"][:t]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(L):
        h = f"h.{i}."
        y = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps=1e-5)
        qkv = F.linear(y, p[h + "attn.qkv.weight"], p[h + "attn.qkv.bias"])
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, C)
        x = x + F.linear(y, p[h + "attn.proj.weight"], p[h + "attn.proj.bias"])
        y = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps=1e-5)
        y = F.gelu(F.linear(y, p[h + "mlp.fc.weight"], p[h + "mlp.fc.bias"]), approximate="tanh")
        x = x + F.linear(y, p[h + "mlp.proj.weight"], p[h + "mlp.proj.bias"])
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    logits = x @ p["wte"].t()
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    return logits, loss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tierzero", default="build/tierzero", help="the tierzero binary")
    ap.add_argument("--out", default="tests/fixtures", help="folder for gpt_ref.json and gpt_ref.bin")
    args = ap.parse_args()
    torch.manual_seed(SEED)
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory() as tmp:
        cfg_path, init_path = os.path.join(tmp, "config.json"), os.path.join(tmp, "init.bin")
        with open(cfg_path, "w") as f:
            json.dump(CONFIG, f)
        subprocess.run([args.tierzero, "train", "--model", cfg_path, "--seed", str(SEED),
                        "--init-out", init_path], check=True, stdout=subprocess.DEVNULL)
        with open(init_path + ".json") as f:
            table = json.load(f)
        flat = torch.from_numpy(__import__("numpy").fromfile(init_path, dtype="<f4").copy())
    assert flat.numel() == table["numel"], "size table and file disagree"
    checksum = {"sum": float(flat.double().sum()), "sum_sq": float((flat.double() ** 2).sum())}

    tensors = table["tensors"]
    params = {t["name"]: flat[t["offset"]:t["offset"] + math.prod(t["shape"])].view(*t["shape"]).clone()
              .requires_grad_(True) for t in tensors}

    g = torch.Generator().manual_seed(SEED)
    seq = torch.randint(0, CONFIG["vocab_size"], (B, T + 1), generator=g)
    idx, targets = seq[:, :T].contiguous(), seq[:, 1:].contiguous()

    logits, loss = forward(params, idx, targets)
    loss.backward()
    blobs = [("logits", logits.detach().reshape(-1))]
    blobs += [("grad:" + t["name"], params[t["name"]].grad.detach().clone().reshape(-1)) for t in tensors]

    decay = [params[t["name"]] for t in tensors if t["weight_decay"]]
    no_decay = [params[t["name"]] for t in tensors if not t["weight_decay"]]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": HP["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=HP["max_lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"])
    losses, norms = [], []
    for step in range(STEPS):
        opt.zero_grad(set_to_none=False)
        _, loss_s = forward(params, idx, targets)
        loss_s.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), HP["grad_clip"])))
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        opt.step()
        losses.append(float(loss_s))

    os.makedirs(args.out, exist_ok=True)
    offsets, pos = {}, 0
    with open(os.path.join(args.out, "gpt_ref.bin"), "wb") as f:
        for name, blob in blobs:
            data = blob.detach().to(torch.float32).contiguous().numpy().astype("<f4")
            f.write(data.tobytes())
            offsets[name] = {"offset": pos, "numel": int(data.size)}
            pos += int(data.size)
    doc = {"generator": "scripts/torch_reference.py", "torch_version": torch.__version__, "config": CONFIG,
           "batch": B, "seq": T, "seed": SEED, "hyper_parameters": HP, "init_checksum": checksum,
           "tokens": idx.reshape(-1).tolist(), "targets": targets.reshape(-1).tolist(), "loss": float(loss),
           "step_losses": losses, "step_grad_norms": norms, "arrays": offsets}
    with open(os.path.join(args.out, "gpt_ref.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"loss {float(loss):.6f}; step losses {[round(x, 5) for x in losses]}; wrote {args.out}/gpt_ref.*")


if __name__ == "__main__":
    main()
