#!/usr/bin/env python3
"""PyTorch side of the model benchmark (bench/run_model_bench.sh): the same model and config as
tz_model_bench, one training step = forward, backward, global-norm clipping and AdamW, fp32, at a given
thread count. Prints one JSON line like tz_model_bench, with the same FLOP formula per family
(model/flops.hpp): B T (6 L W + 12 L T C + 6 V C), W = the weights of one block's linear layers
(GPT-2: W = 12 C^2). Run with Debian's PyTorch: /usr/bin/python3.
    /usr/bin/python3 bench/torch_gpt.py --model gpt-small --batch 8 --seq 256 --threads 2
    /usr/bin/python3 bench/torch_gpt.py --model bench/configs/llama-bench.json --batch 8 --seq 256
The model is a preset of models/ (by name or alias, as tierzero finds it) or a config file: GPT-2's keys,
tierzero's architecture keys, or a Hugging Face llama / gpt_neox config.json. The architectures are
tierzero's (docs/model.md): pre-norm blocks with LayerNorm or RMSNorm, learned or rotary positions
(Hugging Face's half-split pairs, a rotary fraction of each head), grouped-query attention, GELU or
SwiGLU MLP, sequential or parallel residual, tied or untied LM head.

PyTorch gets its best configuration on these machines (the driver script sets the environment):
- OMP_WAIT_POLICY=PASSIVE and OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = threads: PyTorch's OpenMP pool and
  OpenBLAS's pthreads both run; with OpenMP's default (spinning) wait they fight for the cores.
- torch.set_num_threads(threads) and torch.set_num_interop_threads(1) (no inter-op pool: eager training
  runs one op at a time), autograd anomaly detection off, no profiler.
- OPENBLAS_CORETYPE, when the driver found a faster OpenBLAS kernel than the one OpenBLAS picks itself
  (OpenBLAS 0.3.21 falls back to its SSE3 'Prescott' kernels on CPUs it does not know).
- Fused products: one matrix for Q, K and V, one for SwiGLU's gate and up. Grouped-query attention
  multiplies each key/value head with its group of query heads as one batched product (no copy of K and
  V per query head). The causal mask, the positions and the rotary tables are built once, not per
  forward. F.scaled_dot_product_attention is used where this PyTorch has it (2.0 and later; 1.13 has not).
- Gradients are zeroed in place (set_to_none=False) or dropped (--set-to-none); AdamW runs with or without
  foreach (--foreach on|off), or, by default (auto), with whichever of the two steps faster here: after
  the warm-up steps both are timed (CPU seconds) on the same gradients (--calibrate rounds each, median)
  and the faster is kept; the JSON line says which.
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
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def fail(msg):
    raise SystemExit(f"torch_gpt.py: {msg}")


def load_doc(name):
    """A preset of models/ (its name or one of its aliases) or a config file, as JSON."""
    if os.path.isfile(name):
        return json.load(open(name))
    docs = [json.load(open(os.path.join(MODELS_DIR, f))) for f in sorted(os.listdir(MODELS_DIR))
            if f.endswith(".json")]
    found = [d for d in docs if d.get("name") == name or name in d.get("aliases", [])]
    if not found:
        fail(f"--model '{name}' is neither a file nor a preset ({', '.join(d['name'] for d in docs)})")
    return found[0]


def gpt2_defaults():
    return dict(family="gpt2", norm="layernorm", norm_bias=True, norm_eps=1e-5, positions="learned",
                rope_theta=10000.0, rotary_fraction=1.0, n_kv_head=0, qkv_bias=True, attn_out_bias=True,
                mlp="gelu_tanh", mlp_hidden=0, mlp_bias=True, residual="sequential", tied_embeddings=True)


def read_config(doc, origin):
    """The model's shape and architecture (tierzero's GptConfig fields) from any of the readings."""
    try:
        return read_config_keys(doc, origin)
    except KeyError as e:
        fail(f"{origin}: missing key {e}")


def read_config_keys(doc, origin):
    mt = doc.get("model_type", "")
    if doc.get("rope_scaling") not in (None, {}):
        fail(f"{origin}: rope_scaling {doc['rope_scaling']} is not built in the PyTorch benchmark")
    c = gpt2_defaults()
    if mt in ("llama", "gpt_neox"):
        c.update(L=doc["num_hidden_layers"], C=doc["hidden_size"], H=doc["num_attention_heads"],
                 V=doc["vocab_size"], P=doc["max_position_embeddings"], mlp_hidden=doc["intermediate_size"],
                 positions="rotary", tied_embeddings=doc.get("tie_word_embeddings", False))
        if mt == "llama":
            if doc.get("hidden_act", "silu") != "silu":
                fail(f"{origin}: hidden_act '{doc['hidden_act']}' (llama: silu only)")
            bias = doc.get("attention_bias", False)
            c.update(family="llama", norm="rmsnorm", norm_bias=False, norm_eps=doc.get("rms_norm_eps", 1e-6),
                     rope_theta=doc.get("rope_theta", 10000.0), n_kv_head=doc.get("num_key_value_heads", 0) or 0,
                     qkv_bias=bias, attn_out_bias=bias, mlp="swiglu", mlp_bias=doc.get("mlp_bias", False))
        else:
            act = {"gelu": "gelu_exact", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                   "gelu_fast": "gelu_tanh"}.get(doc.get("hidden_act", "gelu"))
            if act is None:
                fail(f"{origin}: hidden_act '{doc['hidden_act']}' (gpt_neox: gelu or gelu_new)")
            bias = doc.get("attention_bias", True)
            c.update(family="gpt_neox", norm_eps=doc.get("layer_norm_eps", 1e-5),
                     rope_theta=doc.get("rotary_emb_base", doc.get("rope_theta", 10000.0)),
                     rotary_fraction=doc.get("rotary_pct", 1.0), qkv_bias=bias, attn_out_bias=bias, mlp=act,
                     residual="parallel" if doc.get("use_parallel_residual", True) else "sequential")
    elif mt in ("", "gpt2"):
        c.update(L=doc["n_layer"], C=doc["n_embd"], H=doc["n_head"], V=doc["vocab_size"],
                 P=doc.get("n_positions", doc.get("n_ctx")))
        for k in gpt2_defaults():
            if k in doc:
                c[k] = doc[k]
        if "norm" in doc and "norm_bias" not in doc:
            c["norm_bias"] = doc["norm"] == "layernorm"
        if doc.get("n_inner"):
            c["mlp_hidden"] = doc["n_inner"]
        if "layer_norm_epsilon" in doc:
            c["norm_eps"] = doc["layer_norm_epsilon"]
        if "tie_word_embeddings" in doc:
            c["tied_embeddings"] = doc["tie_word_embeddings"]
        act = doc.get("activation_function")
        if act is not None:
            c["mlp"] = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu_exact"}.get(act)
            if c["mlp"] is None:
                fail(f"{origin}: activation_function '{act}' (gelu_new or gelu)")
    else:
        fail(f"{origin}: model_type '{mt}' (gpt2, llama or gpt_neox)")
    if c["mlp"] == "swiglu" and not c["mlp_hidden"]:
        fail(f"{origin}: a SwiGLU MLP needs its width (mlp_hidden / intermediate_size)")
    c["KV"] = c["n_kv_head"] or c["H"]
    c["F"] = c["mlp_hidden"] or 4 * c["C"]
    if c["C"] % c["H"] or c["H"] % c["KV"]:
        fail(f"{origin}: heads {c['H']} must divide the width {c['C']}, key/value heads {c['KV']} the heads")
    return c


def step_flops(c, B, T):
    """FLOPs of one training step, as model/flops.hpp counts them: matrix products only, attention dense."""
    L, C, H, KV, V, Fw = c["L"], c["C"], c["H"], c["KV"], c["V"], c["F"]
    D = C // H
    W = C * (H + 2 * KV) * D + C * H * D + (3 if c["mlp"] == "swiglu" else 2) * C * Fw
    return B * T * (6 * L * W + 12 * L * T * C + 6 * V * C)


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(C))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class _LayerNormNoBias(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(C))

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, None, self.eps)


def make_norm(c):
    if c["norm"] == "rmsnorm":
        return RMSNorm(c["C"], c["norm_eps"])
    return nn.LayerNorm(c["C"], eps=c["norm_eps"], elementwise_affine=True) if c["norm_bias"] else \
        _LayerNormNoBias(c["C"], c["norm_eps"])


def rotate(x, cos, sin, R):
    """Hugging Face's rotary positions on the first R dimensions of each head (pairs i, i + R/2)."""
    xr, rest = (x, None) if R == x.size(-1) else (x[..., :R], x[..., R:])
    x1, x2 = xr[..., : R // 2], xr[..., R // 2:]
    out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    return out if rest is None else torch.cat((out, rest), dim=-1)


class Block(nn.Module):
    def __init__(self, c, T):
        super().__init__()
        C, H, KV, D, Fw = c["C"], c["H"], c["KV"], c["C"] // c["H"], c["F"]
        self.H, self.KV, self.D, self.F, self.c = H, KV, D, Fw, c
        self.ln_1, self.ln_2 = make_norm(c), make_norm(c)
        self.qkv = nn.Linear(C, (H + 2 * KV) * D, bias=c["qkv_bias"])
        self.proj = nn.Linear(C, C, bias=c["attn_out_bias"])
        self.fc = nn.Linear(C, (2 if c["mlp"] == "swiglu" else 1) * Fw, bias=c["mlp_bias"])  # gate, up fused
        self.mlp_proj = nn.Linear(Fw, C, bias=c["mlp_bias"])
        self.register_buffer("masked", ~torch.ones(T, T, dtype=torch.bool).tril(), persistent=False)

    def attention(self, x, rot):
        B, T, C = x.shape
        H, KV, D = self.H, self.KV, self.D
        q, k, v = self.qkv(x).split([H * D, KV * D, KV * D], dim=2)
        q, k, v = q.view(B, T, H, D).transpose(1, 2), k.view(B, T, KV, D).transpose(1, 2), \
            v.view(B, T, KV, D).transpose(1, 2)
        if rot is not None:
            q, k = rotate(q, *rot), rotate(k, *rot)
        if HAS_SDPA:
            if KV != H:  # query head h reads key/value head h // (H / KV), as Hugging Face's repeat_kv
                k, v = (z.repeat_interleave(H // KV, dim=1) for z in (k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            G = H // KV  # each key/value head with its G query heads as one product of G T rows
            qg = q.reshape(B, KV, G * T, D)
            att = (qg @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
            att = att.view(B, KV, G, T, T).masked_fill(self.masked[:T, :T], float("-inf")).softmax(dim=-1)
            y = (att.view(B, KV, G * T, T) @ v).view(B, H, T, D)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def mlp(self, x):
        h = self.fc(x)
        if self.c["mlp"] == "swiglu":
            gate, up = h.split(self.F, dim=-1)
            h = F.silu(gate) * up
        else:
            h = F.gelu(h, approximate="tanh" if self.c["mlp"] == "gelu_tanh" else "none")
        return self.mlp_proj(h)

    def forward(self, x, rot):
        if self.c["residual"] == "parallel":
            return x + self.attention(self.ln_1(x), rot) + self.mlp(self.ln_2(x))
        x = x + self.attention(self.ln_1(x), rot)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c, T):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["V"], c["C"])
        self.wpe = nn.Embedding(c["P"], c["C"]) if c["positions"] == "learned" else None
        self.blocks = nn.ModuleList(Block(c, T) for _ in range(c["L"]))
        self.ln_f = make_norm(c)
        self.lm_head = None if c["tied_embeddings"] else nn.Linear(c["C"], c["V"], bias=False)
        self.register_buffer("pos", torch.arange(T), persistent=False)
        self.rot = None
        if c["positions"] == "rotary":
            D = c["C"] // c["H"]
            R = 2 * int(D * c["rotary_fraction"] // 2)
            inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, R, 2, dtype=torch.float32) / R))
            ang = torch.outer(torch.arange(T, dtype=torch.float32), inv_freq)
            self.rot = (ang.cos(), ang.sin(), R)

    def forward(self, idx, targets):
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe(self.pos[: idx.size(1)])
        rot = None if self.rot is None else (self.rot[0][: idx.size(1)], self.rot[1][: idx.size(1)], self.rot[2])
        for b in self.blocks:
            x = b(x, rot)
        x = self.ln_f(x)
        logits = self.lm_head(x) if self.lm_head is not None else x @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt-tiny", help="preset of models/ or a config file")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--foreach", choices=("auto", "on", "off"), default="auto",
                    help="AdamW(foreach=...): auto = the faster here, timed after the warm-up (CPU time)")
    ap.add_argument("--calibrate", type=int, default=3, help="optimizer steps timed per foreach setting (auto)")
    ap.add_argument("--set-to-none", action="store_true", help="zero_grad(set_to_none=True)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    torch.autograd.set_detect_anomaly(False)
    assert torch.get_num_threads() == a.threads
    torch.manual_seed(1)
    c = read_config(load_doc(a.model), a.model)
    if a.batch < 1 or not 1 <= a.seq <= c["P"] or a.threads < 1 or a.steps < 1 or a.warmup < 0 or a.calibrate < 1:
        fail(f"bad --batch {a.batch} (>= 1), --seq {a.seq} (1..{c['P']}), --threads {a.threads}, "
             f"--steps {a.steps}, --warmup {a.warmup} or --calibrate {a.calibrate}")
    B, T = a.batch, a.seq
    model = GPT(c, T)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            foreach=a.foreach == "on")

    def step():
        idx = torch.randint(0, c["V"], (B, T))
        tgt = torch.randint(0, c["V"], (B, T))
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=a.set_to_none)
        model(idx, tgt).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return time.perf_counter() - t0, time.process_time() - c0

    for _ in range(a.warmup):
        step()
    foreach = a.foreach == "on"
    optimizer_ms = {}
    if a.foreach == "auto":
        if a.warmup == 0:
            step()  # gradients to step on
        for choice in (False, True):
            opt.param_groups[0]["foreach"] = choice
            opt.step()  # first call on this path
            ts = []
            for _ in range(a.calibrate):  # CPU time: what other jobs on the machine inflate least
                c0 = time.process_time()
                opt.step()
                ts.append(time.process_time() - c0)
            optimizer_ms["foreach" if choice else "loop"] = round(statistics.median(ts) * 1e3, 2)
        foreach = optimizer_ms["foreach"] < optimizer_ms["loop"]
        opt.param_groups[0]["foreach"] = foreach
    times, cpu = zip(*(step() for _ in range(a.steps)))
    t = statistics.median(times)
    print(json.dumps({"impl": "pytorch", "config": a.model, "family": c["family"], "threads": a.threads,
                      "step_s": round(t, 4), "cpu_s": round(statistics.median(cpu), 4),
                      "tokens_per_s": round(B * T / t, 1), "gflops": round(step_flops(c, B, T) / t / 1e9, 2),
                      "torch_version": torch.__version__, "sdpa": HAS_SDPA, "foreach": foreach,
                      "optimizer_ms": optimizer_ms, "set_to_none": a.set_to_none,
                      "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", "")}))


if __name__ == "__main__":
    main()
