#!/usr/bin/env python3
"""PyTorch side of the model benchmark (bench/run_model_bench.sh): the same GPT-2 model and config as
tz_model_bench (pre-LN, tanh GELU, tied head, fp32), one training step = forward, backward, global-norm
clipping and AdamW, at a given thread count. Prints one JSON line like tz_model_bench, with the same
FLOP formula: B T (72 L C^2 + 12 L T C + 6 V C). Run with Debian's PyTorch: /usr/bin/python3.
    /usr/bin/python3 bench/torch_gpt.py --model gpt-small --batch 8 --seq 256 --threads 2
The model is a preset of models/ (by name or alias, as tierzero finds it) or a GPT-2 config file.

PyTorch gets its best configuration on these machines (the driver script sets the environment):
- OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = threads: PyTorch's OpenMP pool and
  OpenBLAS's pthreads both run; with OpenMP's default (spinning) wait they fight for the cores.
- torch.set_num_threads(threads) and torch.set_num_interop_threads(1) (no inter-op pool: eager training
  runs one op at a time), autograd anomaly detection off, no profiler.
- OPENBLAS_CORETYPE, when the driver found a faster OpenBLAS kernel than the one OpenBLAS picks itself
  (OpenBLAS 0.3.21 falls back to its SSE3 'Prescott' kernels on CPUs it does not know).
- The causal mask is built once, not per forward; gradients are zeroed in place (set_to_none=False)
  or dropped (--set-to-none), and AdamW runs with or without foreach (--foreach): the driver uses the
  faster of these, measured.
"""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def load_model(name):
    """The shape of a preset of models/ (its name or one of its aliases) or of a config file."""
    if os.path.isfile(name):
        doc = json.load(open(name))
    else:
        docs = [json.load(open(os.path.join(MODELS_DIR, f))) for f in sorted(os.listdir(MODELS_DIR))
                if f.endswith(".json")]
        found = [d for d in docs if d.get("name") == name or name in d.get("aliases", [])]
        if not found:
            names = ", ".join(d["name"] for d in docs)
            raise SystemExit(f"torch_gpt.py: --model '{name}' is neither a file nor a preset ({names})")
        doc = found[0]
    return dict(L=doc["n_layer"], C=doc["n_embd"], H=doc["n_head"], V=doc["vocab_size"], P=doc["n_positions"])


class Block(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.register_buffer("masked", ~torch.ones(T, T, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
        q, k, v = (z.view(B, T, self.H, C // self.H).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.H))
        att = att.masked_fill(self.masked[:T, :T], float("-inf")).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, H, V, P, T):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(P, C)
        self.blocks = nn.ModuleList(Block(C, H, T) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.register_buffer("pos", torch.arange(T), persistent=False)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(self.pos[: idx.size(1)])
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt-tiny", help="preset of models/ or a config file")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--foreach", action="store_true", help="AdamW(foreach=True)")
    ap.add_argument("--set-to-none", action="store_true", help="zero_grad(set_to_none=True)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.autograd.set_detect_anomaly(False)
    assert torch.get_num_threads() == a.threads
    torch.manual_seed(1)
    c = load_model(a.model)
    if a.batch < 1 or not 1 <= a.seq <= c["P"] or a.threads < 1 or a.steps < 1 or a.warmup < 0:
        raise SystemExit(f"torch_gpt.py: bad --batch {a.batch} (>= 1), --seq {a.seq} (1..{c['P']}), "
                         f"--threads {a.threads}, --steps {a.steps} or --warmup {a.warmup}")
    c.update(B=a.batch, T=a.seq)
    model = GPT(c["L"], c["C"], c["H"], c["V"], c["P"], c["T"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, foreach=a.foreach)
    times, cpu = [], []
    for s in range(a.warmup + a.steps):
        idx = torch.randint(0, c["V"], (c["B"], c["T"]))
        tgt = torch.randint(0, c["V"], (c["B"], c["T"]))
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=a.set_to_none)
        model(idx, tgt).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if s >= a.warmup:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    t = statistics.median(times)
    L, C, V, T, B = c["L"], c["C"], c["V"], c["T"], c["B"]
    flops = B * T * (72 * L * C * C + 12 * L * T * C + 6 * V * C)
    print(json.dumps({"impl": "pytorch", "config": a.model, "threads": a.threads, "step_s": round(t, 4),
                      "cpu_s": round(statistics.median(cpu), 4), "tokens_per_s": round(B * T / t, 1),
                      "gflops": round(flops / t / 1e9, 2), "torch_version": torch.__version__,
                      "foreach": a.foreach, "set_to_none": a.set_to_none,
                      "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "")}))


if __name__ == "__main__":
    main()
