#!/usr/bin/python3
"""Writes two tiny Hugging Face tokenizer.json files, one in each style tierzero reads, for the
tokenizer tests (tests/fixtures/tokenizers/). Their vocabularies are made up: the 256 byte tokens in
GPT-2's byte-to-unicode alphabet plus a few merges, so that the tests can work out every encoding by
hand.

  llama3_style.json   Llama 3's layout: a Sequence of a Split with Llama 3's pattern and a ByteLevel
                      (use_regex false), model.ignore_merges true, the bytes at ids 0..255 and
                      <|begin_of_text|>, <|end_of_text|> added after the vocabulary
  gpt_neox_style.json GPT-NeoX's layout: a ByteLevel pre-tokenizer (GPT-2's pattern), <|endoftext|> at
                      id 0 and <|padding|> at id 1, then the bytes
  gpt_neox_nfc_style.json  the published GPT-NeoX-20B / Pythia file's extras on top: an NFC normalizer
                      and added tokens that are not special (runs of 2, 3 and 4 spaces, "normalized":
                      true) after the vocabulary; a merge "Ã ©" makes "é" (U+00E9) one token

Run from the repository root: python3 scripts/gen_tokenizer_json_fixtures.py
"""
import json
import os

LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def byte_alphabet():
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    cps = {b: b for b in printable}
    extra = 0
    for b in range(256):
        if b not in cps:
            cps[b] = 256 + extra
            extra += 1
    return [chr(cps[b]) for b in range(256)]  # byte -> its character, in byte order


def vocabulary(first_id, merges, whole_tokens):
    vocab = {}
    for ch in byte_alphabet():
        vocab[ch] = first_id + len(vocab)
    for left, right in merges:
        vocab.setdefault(left + right, first_id + len(vocab))
    for t in whole_tokens:
        vocab.setdefault(t, first_id + len(vocab))
    return vocab


def added(id_, content):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def model(vocab, merges, ignore_merges):
    m = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False}
    if ignore_merges is not None:
        m["ignore_merges"] = ignore_merges
    m["vocab"] = vocab
    m["merges"] = [f"{a} {b}" for a, b in merges]
    return m


def llama3_style():
    # "DON" is a token no merge makes: only ignore_merges turns the pre-token "DON" into it.
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("1", "2"), ("12", "3"), ("'", "T"), ("č", "Ċ"),
              ("čĊ", "čĊ"), ("Ġ", "ä"), ("ä", "¸")]
    vocab = vocabulary(0, merges, ["DON"])
    n = len(vocab)
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(n, "<|begin_of_text|>"), added(n + 1, "<|end_of_text|>")],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [n],
                                                      "tokens": ["<|begin_of_text|>"]}}}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": model(vocab, merges, True),
    }


def gpt_neox_style():
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("D", "O"), ("DO", "N"), ("1", "2"), ("12", "3"),
              ("Ġ", "1"), ("č", "Ċ")]
    vocab = vocabulary(2, merges, [])
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(0, "<|endoftext|>"), added(1, "<|padding|>")],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
        "model": model(vocab, merges, None),
    }


def gpt_neox_nfc_style():
    doc = gpt_neox_style()
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("D", "O"), ("DO", "N"), ("1", "2"), ("12", "3"),
              ("Ġ", "1"), ("č", "Ċ"), ("Ã", "©")]
    vocab = vocabulary(2, merges, [])
    n = len(vocab) + 2
    doc["normalizer"] = {"type": "NFC"}
    doc["model"] = model(vocab, merges, None)
    for k, spaces in enumerate([4, 3, 2]):  # the published file lists its runs longest first, too
        t = added(n + k, " " * spaces)
        t["special"] = False
        t["normalized"] = True
        doc["added_tokens"].append(t)
    return doc


if __name__ == "__main__":
    out = "tests/fixtures/tokenizers"
    os.makedirs(out, exist_ok=True)
    for name, doc in [("llama3_style.json", llama3_style()), ("gpt_neox_style.json", gpt_neox_style()),
                      ("gpt_neox_nfc_style.json", gpt_neox_nfc_style())]:
        with open(os.path.join(out, name), "w") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
