#!/usr/bin/env python3
"""Reads a GPT-2 safetensors file with json + numpy (no tierzero code, no safetensors package),
builds GPT-2 in PyTorch the Hugging Face way (Conv1D: y = x W + b with W stored (in, out); LM head
tied to wte), runs it on a batch of tokens and compares its logits with tierzero's.

    /usr/bin/python3 torch_safetensors_logits.py --model FILE.safetensors --config config.json \
        --tokens tokens.bin --logits logits.bin --batch B --seq T [--tolerance 1e-5]

tokens.bin: int32 (B, T); logits.bin: float32 (B, T, V), tierzero's. Exits 0 when
max |torch - tierzero| <= tolerance x max(1, max |tierzero|), printing the error either way.
Run with Debian's PyTorch (python3-torch), OMP_WAIT_POLICY=PASSIVE.
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        buf = data[b:end]
        if e["dtype"] == "F32":
            a = np.frombuffer(buf, dtype="<f4").copy()
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: tensor {name}: unsupported dtype {e['dtype']}")
        out[name] = torch.from_numpy(a.reshape(e["shape"]))
    return out


def gpt2_logits(p, cfg, idx):
    L, C, H = cfg["n_layer"], cfg["n_embd"], cfg["n_head"]
    b, t = idx.shape
    x = p["wte.weight"][idx] + p["wpe.weight"][:t]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(L):
        h = f"h.{i}."
        y = F.layer_norm(x, (C,), p[h + "ln_1.weight"], p[h + "ln_1.bias"], eps=1e-5)
        qkv = y @ p[h + "attn.c_attn.weight"] + p[h + "attn.c_attn.bias"]  # Conv1D
        q, k, v = qkv.split(C, dim=2)
        q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, C)
        x = x + y @ p[h + "attn.c_proj.weight"] + p[h + "attn.c_proj.bias"]
        y = F.layer_norm(x, (C,), p[h + "ln_2.weight"], p[h + "ln_2.bias"], eps=1e-5)
        y = F.gelu(y @ p[h + "mlp.c_fc.weight"] + p[h + "mlp.c_fc.bias"], approximate="tanh")
        x = x + y @ p[h + "mlp.c_proj.weight"] + p[h + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    return x @ p["wte.weight"].t()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--logits", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--tolerance", type=float, default=1e-5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    cfg = json.load(open(a.config))
    p = read_safetensors(a.model)
    V = p["wte.weight"].shape[0]
    idx = torch.from_numpy(np.fromfile(a.tokens, dtype="<i4").astype(np.int64).reshape(a.batch, a.seq))
    want = torch.from_numpy(np.fromfile(a.logits, dtype="<f4").reshape(a.batch, a.seq, V))
    with torch.no_grad():
        got = gpt2_logits(p, cfg, idx)
    err = (got - want).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    print(f"torch vs tierzero logits: max abs error {err:.3e} (scale {scale:.3f}, tolerance {a.tolerance:g})")
    sys.exit(0 if err <= a.tolerance * scale else 1)


if __name__ == "__main__":
    main()
