#!/usr/bin/env python3
"""Checks that a safetensors file tierzero exported is the Hugging Face file of its model, with json +
numpy only (no tierzero code, no safetensors or transformers package): from a Hugging Face config.json
("llama" or "gpt_neox") it lists the tensors LlamaForCausalLM / GPTNeoXForCausalLM hold, with their
shapes, and builds each from tierzero's flat parameters (fp32, tierzero's layout order, written by the
test) the way the Hugging Face classes lay them out: Llama's q/k/v_proj are the query, key and value
rows of tierzero's attn.qkv, gate/up_proj the two halves of mlp.fc; GPT-NeoX's query_key_value groups
its rows per head as [q_h | k_h | v_h]. Every name, shape and value must match exactly (F32 files) or
after rounding to bf16 (BF16 files), and the file must hold nothing else.

    python3 check_hf_safetensors.py --model FILE.safetensors --config config.json --params params.bin

Exits 0 when the file is right, else prints the first difference and exits 1.
"""
import argparse
import json
import struct
import sys

import numpy as np


def tierzero_layout(cfg):
    """(name, shape) of tierzero's parameter tensors in its flat order, from the Hugging Face config."""
    family = cfg["model_type"]
    C, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    D = C // H
    F = cfg["intermediate_size"]
    tied = cfg.get("tie_word_embeddings", family != "gpt_neox")
    if family == "llama":
        norm_bias, qkv_bias, out_bias = False, cfg.get("attention_bias", False), cfg.get("attention_bias", False)
        mlp_bias, fc_rows = cfg.get("mlp_bias", False), 2 * F
    elif family == "gpt_neox":
        norm_bias, qkv_bias, out_bias = True, cfg.get("attention_bias", True), cfg.get("attention_bias", True)
        mlp_bias, fc_rows = True, F
    else:
        raise SystemExit(f"model_type {family}: expected llama or gpt_neox")
    out = [("wte", (V, C))]
    for i in range(L):
        h = f"h.{i}."
        out.append((h + "ln_1.weight", (C,)))
        if norm_bias:
            out.append((h + "ln_1.bias", (C,)))
        out.append((h + "attn.qkv.weight", ((H + 2 * KV) * D, C)))
        if qkv_bias:
            out.append((h + "attn.qkv.bias", ((H + 2 * KV) * D,)))
        out.append((h + "attn.proj.weight", (C, H * D)))
        if out_bias:
            out.append((h + "attn.proj.bias", (C,)))
        out.append((h + "ln_2.weight", (C,)))
        if norm_bias:
            out.append((h + "ln_2.bias", (C,)))
        out.append((h + "mlp.fc.weight", (fc_rows, C)))
        if mlp_bias:
            out.append((h + "mlp.fc.bias", (fc_rows,)))
        out.append((h + "mlp.proj.weight", (C, F)))
        if mlp_bias:
            out.append((h + "mlp.proj.bias", (C,)))
    out.append(("ln_f.weight", (C,)))
    if norm_bias:
        out.append(("ln_f.bias", (C,)))
    if not tied:
        out.append(("lm_head.weight", (V, C)))
    return out


def hugging_face_tensors(cfg, tz):
    """Hugging Face name -> array, built from tierzero's tensors `tz` (name -> array)."""
    family = cfg["model_type"]
    C, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    D = C // H
    F = cfg["intermediate_size"]
    out = {}
    if family == "llama":
        out["model.embed_tokens.weight"] = tz["wte"]
        for i in range(L):
            h, p = f"h.{i}.", f"model.layers.{i}."
            out[p + "input_layernorm.weight"] = tz[h + "ln_1.weight"]
            for kind in ("weight", "bias"):
                qkv = tz.get(h + "attn.qkv." + kind)
                if qkv is None:
                    continue
                out[p + "self_attn.q_proj." + kind] = qkv[: H * D]
                out[p + "self_attn.k_proj." + kind] = qkv[H * D:(H + KV) * D]
                out[p + "self_attn.v_proj." + kind] = qkv[(H + KV) * D:]
            out[p + "self_attn.o_proj.weight"] = tz[h + "attn.proj.weight"]
            if h + "attn.proj.bias" in tz:
                out[p + "self_attn.o_proj.bias"] = tz[h + "attn.proj.bias"]
            out[p + "post_attention_layernorm.weight"] = tz[h + "ln_2.weight"]
            for kind in ("weight", "bias"):
                fc = tz.get(h + "mlp.fc." + kind)
                if fc is None:
                    continue
                out[p + "mlp.gate_proj." + kind] = fc[:F]
                out[p + "mlp.up_proj." + kind] = fc[F:]
                out[p + "mlp.down_proj." + kind] = tz[h + "mlp.proj." + kind]
        out["model.norm.weight"] = tz["ln_f.weight"]
        if "lm_head.weight" in tz:
            out["lm_head.weight"] = tz["lm_head.weight"]
    else:
        out["gpt_neox.embed_in.weight"] = tz["wte"]
        for i in range(L):
            h, p = f"h.{i}.", f"gpt_neox.layers.{i}."
            for kind in ("weight", "bias"):
                out[p + "input_layernorm." + kind] = tz[h + "ln_1." + kind]
                out[p + "post_attention_layernorm." + kind] = tz[h + "ln_2." + kind]
                qkv = tz.get(h + "attn.qkv." + kind)
                if qkv is not None:
                    # tierzero's rows are [q | k | v], each (H, D); Hugging Face's are per head [q_h | k_h | v_h].
                    rest = qkv.shape[1:]
                    out[p + "attention.query_key_value." + kind] = (
                        qkv.reshape((3, H, D) + rest).swapaxes(0, 1).reshape((3 * C,) + rest))
                if h + "attn.proj." + kind in tz:
                    out[p + "attention.dense." + kind] = tz[h + "attn.proj." + kind]
                out[p + "mlp.dense_h_to_4h." + kind] = tz[h + "mlp.fc." + kind]
                out[p + "mlp.dense_4h_to_h." + kind] = tz[h + "mlp.proj." + kind]
        out["gpt_neox.final_layer_norm.weight"] = tz["ln_f.weight"]
        out["gpt_neox.final_layer_norm.bias"] = tz["ln_f.bias"]
        if "lm_head.weight" in tz:
            out["embed_out.weight"] = tz["lm_head.weight"]
    return out


def to_bf16_rounded(a):
    """fp32 -> bf16 (nearest even) -> fp32, as the export rounds."""
    u = a.astype("<f4").view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--params", required=True)
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    flat = np.fromfile(a.params, dtype="<f4")
    tz, at = {}, 0
    for name, shape in tierzero_layout(cfg):
        n = int(np.prod(shape))
        tz[name] = flat[at:at + n].reshape(shape)
        at += n
    if at != flat.size:
        raise SystemExit(f"{a.params}: {flat.size} floats, the config's tierzero layout has {at}")
    want = hugging_face_tensors(cfg, tz)

    raw = open(a.model, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    header.pop("__metadata__", None)
    names = set(header)
    if names != set(want):
        print(f"FAIL names: missing {sorted(set(want) - names)}, unexpected {sorted(names - set(want))}")
        return 1
    end = 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e_end = e["data_offsets"]
        if b != end:
            print(f"FAIL {name}: data begins at {b}, the tensor before ends at {end}")
            return 1
        end = e_end
        w = want[name]
        if tuple(e["shape"]) != w.shape:
            print(f"FAIL {name}: shape {e['shape']}, Hugging Face's is {list(w.shape)}")
            return 1
        buf = data[b:e_end]
        if e["dtype"] == "F32":
            got, w = np.frombuffer(buf, dtype="<f4"), w.reshape(-1)
        elif e["dtype"] == "BF16":
            got = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            w = to_bf16_rounded(w.reshape(-1))
        else:
            print(f"FAIL {name}: dtype {e['dtype']}")
            return 1
        if got.size != w.size or not np.array_equal(got.view(np.uint32), w.view(np.uint32)):
            bad = int(np.argmax(got.view(np.uint32) != w.view(np.uint32))) if got.size == w.size else -1
            print(f"FAIL {name}: element {bad} differs from tierzero's parameters")
            return 1
    if end != len(data):
        print(f"FAIL the tensors end at {end} of a data section of {len(data)} bytes")
        return 1
    print(f"{a.model}: {len(header)} tensors, Hugging Face's {cfg['model_type']} names, shapes and layout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
