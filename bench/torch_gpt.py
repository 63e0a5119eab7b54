#!/usr/bin/env python3
"""PyTorch side of the model benchmark (bench/run_model_bench.sh): the same GPT-2 model and config as
tz_model_bench (pre-LN, tanh GELU, tied head, fp32), one training step = forward, backward, global-norm
clipping and AdamW, at a given thread count. Prints one JSON line like tz_model_bench, with the same
FLOP formula: B T (72 L C^2 + 12 L T C + 6 V C). Run with Debian's PyTorch: /usr/bin/python3.
    /usr/bin/python3 bench/torch_gpt.py --config small --threads 2
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {"tiny": dict(L=4, C=128, H=4, V=256, T=128, B=8), "small": dict(L=6, C=384, H=6, V=256, T=256, B=8)}


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
        q, k, v = (z.view(B, T, self.H, C // self.H).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.H)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, H, V, T):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    c = CONFIGS[a.config]
    model = GPT(c["L"], c["C"], c["H"], c["V"], c["T"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    times = []
    for s in range(a.warmup + a.steps):
        idx = torch.randint(0, c["V"], (c["B"], c["T"]))
        tgt = torch.randint(0, c["V"], (c["B"], c["T"]))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        model(idx, tgt).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if s >= a.warmup:
            times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    L, C, V, T, B = c["L"], c["C"], c["V"], c["T"], c["B"]
    flops = B * T * (72 * L * C * C + 12 * L * T * C + 6 * V * C)
    print(json.dumps({"impl": "pytorch", "config": a.config, "threads": a.threads, "step_s": round(t, 4),
                      "tokens_per_s": round(B * T / t, 1), "gflops": round(flops / t / 1e9, 2),
                      "torch_version": torch.__version__}))


if __name__ == "__main__":
    main()
