#!/usr/bin/env python3
"""Regenerates the PyTorch reference fixtures that tests/model/torch_reference_test.cpp compares
tierzero's model against, one per architecture case (CASES below: GPT-2; Llama with grouped-query
attention 4:1, SwiGLU, RMSNorm and an untied head; Llama 1:1 with odd heads, attention biases and a
tied head; GPT-NeoX with rotary on a quarter of each head, the parallel residual and exact GELU;
GPT-NeoX with full rotary and the sequential residual).

For each case it asks tierzero for the initial weights of a tiny, oddly sized model
(`tierzero train --init-out`), builds the same model in PyTorch from the config's architecture keys,
written here from the Hugging Face definitions (rotate_half rotary on the first R dims of each head,
repeat_kv for grouped-query heads, RMSNorm in fp32, SwiGLU = down(silu(gate) * up), the parallel
residual x + attn(ln_1(x)) + mlp(ln_2(x))), loads those weights, and dumps for one fixed batch: the
logits, the loss and the gradient of every parameter; then the losses of 10 AdamW steps (warmup +
cosine learning rate, global-norm clipping, decoupled weight decay on matrices only) on that batch.

Run with Debian's PyTorch (python3-torch), from the repository root, after building:
    /usr/bin/python3 scripts/torch_reference.py --tierzero build/tierzero [--case NAME ...]
Writes tests/fixtures/<case>_ref.json (config, batch, hyper-parameters, losses, a checksum of the
initial weights, the offsets of each array) and tests/fixtures/<case>_ref.bin (fp32: logits, then the
gradients in the flat-buffer order of tierzero's parameter layout).
"""
import argparse
import json
import math
import os
import subprocess
import tempfile

import torch
import torch.nn.functional as F

CASES = {
    "gpt": {"n_layer": 2, "n_embd": 36, "n_head": 3, "n_positions": 16, "vocab_size": 61},
    "llama_gqa": {"n_layer": 2, "n_embd": 32, "n_head": 4, "n_positions": 16, "vocab_size": 61, "family": "llama",
                  "norm": "rmsnorm", "norm_bias": False, "norm_eps": 1e-6, "positions": "rotary",
                  "rope_theta": 500000.0, "rotary_fraction": 1.0, "n_kv_head": 1, "qkv_bias": False,
                  "attn_out_bias": False, "mlp": "swiglu", "mlp_hidden": 44, "mlp_bias": False,
                  "residual": "sequential", "tied_embeddings": False},
    "llama_tied": {"n_layer": 2, "n_embd": 30, "n_head": 3, "n_positions": 16, "vocab_size": 61,
                   "family": "llama", "norm": "rmsnorm", "norm_bias": False, "norm_eps": 1e-5,
                   "positions": "rotary", "rope_theta": 10000.0, "rotary_fraction": 1.0, "n_kv_head": 3,
                   "qkv_bias": True, "attn_out_bias": True, "mlp": "swiglu", "mlp_hidden": 40, "mlp_bias": False,
                   "residual": "sequential", "tied_embeddings": True},
    "neox": {"n_layer": 2, "n_embd": 24, "n_head": 3, "n_positions": 16, "vocab_size": 61, "family": "gpt_neox",
             "norm": "layernorm", "norm_bias": True, "norm_eps": 1e-5, "positions": "rotary",
             "rope_theta": 10000.0, "rotary_fraction": 0.25, "n_kv_head": 3, "qkv_bias": True,
             "attn_out_bias": True, "mlp": "gelu_exact", "mlp_hidden": 96, "mlp_bias": True,
             "residual": "parallel", "tied_embeddings": False},
    "neox_seq": {"n_layer": 2, "n_embd": 32, "n_head": 4, "n_positions": 16, "vocab_size": 61,
                 "family": "gpt_neox", "norm": "layernorm", "norm_bias": True, "norm_eps": 1e-5,
                 "positions": "rotary", "rope_theta": 10000.0, "rotary_fraction": 1.0, "n_kv_head": 4,
                 "qkv_bias": True, "attn_out_bias": True, "mlp": "gelu_exact", "mlp_hidden": 72,
                 "mlp_bias": True, "residual": "sequential", "tied_embeddings": True},
}
CONFIG = CASES["gpt"]
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


def rms_norm(x, w, eps):
    """Hugging Face's LlamaRMSNorm (fp32 throughout here)."""
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary(q, k, t):
    """Hugging Face's rotary embedding (half-split pairs) on the first R dims of each head."""
    D = q.shape[-1]
    R = int(D * CONFIG.get("rotary_fraction", 1.0))
    inv_freq = 1.0 / (CONFIG["rope_theta"] ** (torch.arange(0, R, 2, dtype=torch.int64).float() / R))
    freqs = torch.outer(torch.arange(t).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    def rot(x):
        xr, xp = x[..., :R], x[..., R:]
        return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)
    return rot(q), rot(k)


def forward(p, idx, targets):
    """Embeddings, pre-norm blocks, final norm, LM head, mean cross-entropy, by the config's architecture."""
    c = CONFIG
    C, H, L = c["n_embd"], c["n_head"], c["n_layer"]
    KV, D = c.get("n_kv_head", H), C // H
    eps = c.get("norm_eps", 1e-5)
    rms = c.get("norm") == "rmsnorm"
    b, t = idx.shape

    def norm(x, prefix):
        if rms:
            return rms_norm(x, p[prefix + ".weight"], eps)
        return F.layer_norm(x, (C,), p[prefix + ".weight"], p.get(prefix + ".bias"), eps=eps)

    def lin(x, prefix):
        return F.linear(x, p[prefix + ".weight"], p.get(prefix + ".bias"))

    x = p["wte"][idx]
    if c.get("positions", "learned") == "learned":
        x = x + p["wpe"][:t]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(L):
        h = f"h.{i}."
        qkv = lin(norm(x, h + "ln_1"), h + "attn.qkv")
        q, k, v = qkv.split([H * D, KV * D, KV * D], dim=2)
        q = q.view(b, t, H, D).transpose(1, 2)
        k, v = (z.view(b, t, KV, D).transpose(1, 2) for z in (k, v))
        if c.get("positions", "learned") == "rotary":
            q, k = rotary(q, k, t)
        k, v = (z.repeat_interleave(H // KV, dim=1) for z in (k, v))  # repeat_kv
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, C)
        r = x + lin(y, h + "attn.proj")
        m = norm(x if c.get("residual") == "parallel" else r, h + "ln_2")
        f = lin(m, h + "mlp.fc")
        act = c.get("mlp", "gelu_tanh")
        if act == "swiglu":
            gate, up = f.split(c["mlp_hidden"], dim=2)
            f = F.silu(gate) * up
        else:
            f = F.gelu(f, approximate="tanh" if act == "gelu_tanh" else "none")
        x = r + lin(f, h + "mlp.proj")
    x = norm(x, "ln_f")
    head = p["wte"] if c.get("tied_embeddings", True) else p["lm_head.weight"]
    logits = x @ head.t()
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    return logits, loss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tierzero", default="build/tierzero", help="the tierzero binary")
    ap.add_argument("--out", default="tests/fixtures", help="folder for <case>_ref.json and <case>_ref.bin")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="the cases to write (default: all)")
    args = ap.parse_args()
    global CONFIG
    for name in args.case or sorted(CASES):
        CONFIG = CASES[name]
        write_case(name, args)


def write_case(name, args):
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
    with open(os.path.join(args.out, name + "_ref.bin"), "wb") as f:
        for blob_name, blob in blobs:
            data = blob.detach().to(torch.float32).contiguous().numpy().astype("<f4")
            f.write(data.tobytes())
            offsets[blob_name] = {"offset": pos, "numel": int(data.size)}
            pos += int(data.size)
    doc = {"generator": "scripts/torch_reference.py", "torch_version": torch.__version__, "config": CONFIG,
           "batch": B, "seq": T, "seed": SEED, "hyper_parameters": HP, "init_checksum": checksum,
           "tokens": idx.reshape(-1).tolist(), "targets": targets.reshape(-1).tolist(), "loss": float(loss),
           "step_losses": losses, "step_grad_norms": norms, "arrays": offsets}
    with open(os.path.join(args.out, name + "_ref.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"loss {float(loss):.6f}; step losses {[round(x, 5) for x in losses]}; wrote {args.out}/{name}_ref.*")


if __name__ == "__main__":
    main()
