#!/usr/bin/env python3
"""Reads a safetensors file with json + numpy (no tierzero code, no safetensors or transformers
package), builds the model in plain PyTorch the Hugging Face way from its config.json, runs it on a
batch of tokens and compares its logits with tierzero's:
  - GPT-2 (tierzero's config keys: n_layer, n_embd, ...): Conv1D, y = x W + b with W stored
    (in, out); LM head tied to wte;
  - "model_type": "llama" (LlamaForCausalLM's keys and names): RMSNorm, rotary on whole heads with
    rotate_half (llama3 rope_scaling too), grouped-query attention (key/value head h // (H / KV)),
    SwiGLU down(silu(gate x) * up x), optional attention/MLP biases, lm_head or the tied embedding;
  - "model_type": "gpt_neox" (GPTNeoXForCausalLM's): LayerNorm, query_key_value grouped per head as
    [q_h | k_h | v_h], rotary on the first rotary_pct of each head, the parallel residual
    x + attn(ln_1 x) + mlp(ln_2 x) (or sequential), GELU exact ("gelu") or tanh, embed_out.

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


def rotary_tables(dims, t, theta, scaling=None):
    """cos, sin (t, dims) of Hugging Face's rotary embedding (inv_freq over even dimensions, the
    frequencies repeated for the two halves rotate_half pairs), llama3 rescaling when given."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dims, 2, dtype=torch.float64) / dims))
    if scaling:
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        inv_freq = torch.where(medium, smoothed, scaled)
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().float(), emb.sin().float()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def causal_attention(q, k, v):
    """q (b, H, t, D); k, v (b, KV, t, D), each key/value head serving H / KV query heads in turn."""
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    t = q.shape[2]
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    b, H, _, D = q.shape
    return (att @ v).transpose(1, 2).reshape(b, t, H * D)


def linear(x, p, name):
    y = x @ p[name + ".weight"].t()
    return y + p[name + ".bias"] if name + ".bias" in p else y


def llama_logits(p, cfg, idx):
    C, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    D, eps = C // H, cfg.get("rms_norm_eps", 1e-6)
    b, t = idx.shape

    def rms_norm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    cos, sin = rotary_tables(D, t, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"))
    x = p["model.embed_tokens.weight"][idx]
    for i in range(L):
        a = f"model.layers.{i}."
        y = rms_norm(x, p[a + "input_layernorm.weight"])
        q = linear(y, p, a + "self_attn.q_proj").view(b, t, H, D).transpose(1, 2)
        k = linear(y, p, a + "self_attn.k_proj").view(b, t, KV, D).transpose(1, 2)
        v = linear(y, p, a + "self_attn.v_proj").view(b, t, KV, D).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        x = x + linear(causal_attention(q, k, v), p, a + "self_attn.o_proj")
        y = rms_norm(x, p[a + "post_attention_layernorm.weight"])
        y = F.silu(linear(y, p, a + "mlp.gate_proj")) * linear(y, p, a + "mlp.up_proj")
        x = x + linear(y, p, a + "mlp.down_proj")
    x = rms_norm(x, p["model.norm.weight"])
    return x @ p.get("lm_head.weight", p["model.embed_tokens.weight"]).t()


def neox_logits(p, cfg, idx):
    C, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    D, eps = C // H, cfg.get("layer_norm_eps", 1e-5)
    R = int(D * cfg.get("rotary_pct", 0.25))
    act = cfg.get("hidden_act", "gelu")
    b, t = idx.shape
    cos, sin = rotary_tables(R, t, cfg.get("rotary_emb_base", cfg.get("rope_theta", 10000.0)))

    def ln(x, name):
        return F.layer_norm(x, (C,), p[name + ".weight"], p[name + ".bias"], eps=eps)

    def rope(z):
        r, rest = z[..., :R], z[..., R:]
        return torch.cat((r * cos + rotate_half(r) * sin, rest), dim=-1)

    x = p["gpt_neox.embed_in.weight"][idx]
    for i in range(L):
        a = f"gpt_neox.layers.{i}."
        qkv = linear(ln(x, a + "input_layernorm"), p, a + "attention.query_key_value").view(b, t, H, 3 * D)
        q, k, v = (z.transpose(1, 2) for z in qkv.split(D, dim=-1))
        attn = linear(causal_attention(rope(q), rope(k), v), p, a + "attention.dense")

        def mlp(y):
            y = linear(y, p, a + "mlp.dense_h_to_4h")
            y = F.gelu(y) if act == "gelu" else F.gelu(y, approximate="tanh")
            return linear(y, p, a + "mlp.dense_4h_to_h")

        if cfg.get("use_parallel_residual", True):
            x = x + attn + mlp(ln(x, a + "post_attention_layernorm"))
        else:
            x = x + attn
            x = x + mlp(ln(x, a + "post_attention_layernorm"))
    x = ln(x, "gpt_neox.final_layer_norm")
    return x @ p.get("embed_out.weight", p["gpt_neox.embed_in.weight"]).t()


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
    family = cfg.get("model_type", "gpt2")
    forward = {"llama": llama_logits, "gpt_neox": neox_logits}.get(family, gpt2_logits)
    embedding = {"llama": "model.embed_tokens.weight", "gpt_neox": "gpt_neox.embed_in.weight"}
    V = p[embedding.get(family, "wte.weight")].shape[0]
    idx = torch.from_numpy(np.fromfile(a.tokens, dtype="<i4").astype(np.int64).reshape(a.batch, a.seq))
    want = torch.from_numpy(np.fromfile(a.logits, dtype="<f4").reshape(a.batch, a.seq, V))
    with torch.no_grad():
        got = forward(p, cfg, idx)
    err = (got - want).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    print(f"{family}: torch vs tierzero logits: max abs error {err:.3e} (scale {scale:.3f}, tolerance {a.tolerance:g})")
    sys.exit(0 if err <= a.tolerance * scale else 1)


if __name__ == "__main__":
    main()
