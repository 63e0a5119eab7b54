#!/usr/bin/python3
"""Generates tests/fixtures/llama3_pretokenize.json, which pins tierzero's Llama 3 pre-tokenizer to the
reference: the Python `regex` module (Debian: python3-regex) running Llama 3's pattern. Each case is a
text (hex bytes) and its pre-tokens (hex bytes) as `regex` splits them; invalid UTF-8 is decoded with
surrogateescape, so each invalid byte is one code point of the class "other".

The C++ matcher uses the code-point classes of src/data/unicode_classes_table.cpp (written by
scripts/gen_gpt2_pretokenizer_data.py with the `regex` version it names). A newer `regex` knows newer
Unicode; this script refuses a text holding a code point whose class differs between the table and
the installed `regex`, so the fixture tests the matcher, not two Unicode versions.

Run from the repository root: /usr/bin/python3 scripts/gen_llama3_pretokenizer_data.py
"""
import json
import random
import re
import sys

import regex

PATTERN = regex.compile(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
LETTER, NUMBER, SPACE = regex.compile(r"\p{L}"), regex.compile(r"\p{N}"), regex.compile(r"\s")
TABLE = "src/data/unicode_classes_table.cpp"


def classify(cp):
    if 0xD800 <= cp <= 0xDFFF:
        return "O"
    ch = chr(cp)
    if LETTER.match(ch):
        return "L"
    if NUMBER.match(ch):
        return "N"
    if SPACE.match(ch):
        return "S"
    return "O"


def read_table():
    ranges = re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+), CodePointClass::(\w+)\}", open(TABLE).read())
    names = {"letter": "L", "number": "N", "space": "S"}
    return [(int(a, 16), int(b, 16), names[c]) for a, b, c in ranges]


def table_class(ranges, cp):
    for first, last, c in ranges:
        if first <= cp <= last:
            return c
    return "O"


def pieces(data: bytes):
    text = data.decode("utf-8", "surrogateescape")
    return [p.encode("utf-8", "surrogateescape") for p in PATTERN.findall(text)]


def main(path):
    ranges = read_table()
    texts = [
        b"", b"Hello world", b"DON'T STOP, I'M HERE. YOU'RE, WE'VE, THEY'LL, HE'D, IT'S",
        b"don't Don'T it'S we'Ve they'lL 'x ''s !'s 'a 're're",
        "long s: it'\u017f and it'\u017fs".encode(),
        b"1234567 12 1 12345678901 3.14159 -42 1,000,000 x2024y",
        b"Hello!!!\n\nWorld...\r\n\r\nEnd?!\n", b"a, b; c: (d) [e] {f} \"g\" 'h'",
        b"  leading and   inner spaces   ", b"tabs\tand\tmore\t\ttabs", b"a \n b\t \tc  \n",
        b"line one\r\nline two\r\n\r\n  indented\r\n", b"\n\n\nstart", b"   \n   \n   x", b"trailing   ",
        b" !!! ?? \n\n-- \t--\n", b"(word) \"quoted\" 'single' \t\ttabbed", b"a\rb\nc\r\n\rd",
        "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3002\u4e2d\u6587\u3000\u5168\u89d2 \u4e2d\u6587".encode(),
        "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8".encode(),
        "emoji \U0001F600\U0001F680 \U0001F468\u200d\U0001F469\u200d\U0001F467 ok\U0001F44D\U0001F3FD".encode(),
        "cafe\u0301 nai\u0308ve e\u0301\u0301\u0301 \u0928\u092e\u0938\u094d\u0924\u0947 \u0301x".encode(),
        "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u0645\u0631\u062d\u0628\u0627 \u0661\u0662\u0663\u0664".encode(),
        "nbsp\u00a0here \u2003em \u2028line\u2029para \u0085next \x1cfs \u00a0\u00a0x".encode(),
        "\u00bd\u00bd\u00bd\u00bd \u2167 \u00b2\u00b3 x\u00b9".encode(),
        b"bad \xff\xfe bytes \xc3 and \xe2\x82 and \xed\xa0\x80 and \xf4\x90\x80\x80 and \xc0\xaf\xffabc",
        b"<|begin_of_text|>Hi<|end_of_text|>", b"x" * 300 + b" " * 5 + b"y", b"9" * 10 + b"\n" * 3,
    ]
    rng = random.Random(20261204)
    alphabet = [b"a", b"Z", b"S", b"7", b"1234", b" ", b"  ", b"\n", b"\r\n", b"\r", b"\t", b"'", b"'s", b"'T",
                b"'ll", b"!", b".", b"?\n", b"\xc3\xa9", "\u4e2d".encode(), "\U0001F600".encode(), b"\xff",
                b"\xe2\x82", "\u00a0".encode(), "\u0301".encode(), "\u0663".encode(), "\u017f".encode()]
    for _ in range(200):
        texts.append(b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))))
    for t in texts:
        for ch in t.decode("utf-8", "surrogateescape"):
            cp = ord(ch)
            if table_class(ranges, cp) != classify(cp):
                sys.exit(f"text {t!r}: U+{cp:04X} is {table_class(ranges, cp)} in {TABLE} but "
                         f"{classify(cp)} in regex {regex.__version__}; pick another code point")
    cases = [{"text": t.hex(), "pieces": [p.hex() for p in pieces(t)]} for t in texts]
    for c, t in zip(cases, texts):
        assert b"".join(bytes.fromhex(p) for p in c["pieces"]) == t
    with open(path, "w") as f:
        json.dump({"generator": f"regex {regex.__version__}", "pattern": PATTERN.pattern, "cases": cases}, f,
                  indent=0)
        f.write("\n")
    print(f"{path}: {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main("tests/fixtures/llama3_pretokenize.json")
