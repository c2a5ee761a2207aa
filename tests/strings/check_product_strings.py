#!/usr/bin/env python3
"""No product string calls the reference texts "the seed": in the product,
"seed" means the random seed. Reads every string literal in ui/, core/ and
app/ (C++ sources) and the JSON resources a user sees (presets, profiles),
and fails on a "seed" that is not the random-seed field, its flag or a text
that says "random seed"; comments there may not call the texts "the seed"
either (they are the ZeRO paper and the FSDP reference text). Prints each
offender as file:line: text.

usage: check_product_strings.py SOURCE_DIR
"""
import json
import pathlib
import re
import sys

# A literal is fine when it names the random seed: the field/flag itself, or
# a sentence that says "random seed" (RNG uses: "seeded", "seeds" of a generator).
ALLOWED_LITERALS = {"seed", "--seed"}
ALLOWED = re.compile(r"random seed|--seed\b", re.IGNORECASE)
WORD = re.compile(r"seed", re.IGNORECASE)
# How a comment names a reference text by the nickname.
NICKNAME = re.compile(r"\bthe seed\b(?!\s*(of|for|value|stream))|\bseed's\b|\bseed (formula|prediction|number)", re.IGNORECASE)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)

LITERAL = re.compile(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\((.*?)\)\1"|(?:u8|u|U|L)?"((?:[^"\\\n]|\\.)*)"', re.DOTALL)


def strip_comments(text):
    """Blanks out // and /* */ comments, keeping string literals and line numbers."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == '"' or (c == "R" and text.startswith('R"', i)):
            m = LITERAL.match(text, i if c == '"' else i)
            if not m:
                out.append(c)
                i += 1
                continue
            out.append(m.group(0))
            i = m.end()
        elif c == "'":
            m = re.compile(r"'(?:[^'\\\n]|\\.)*'").match(text, i)
            j = m.end() if m else i + 1
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def bad(literal):
    return WORD.search(literal) and literal.strip() not in ALLOWED_LITERALS and not ALLOWED.search(literal)


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    offenders = []
    for folder in ("ui", "core", "app"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cpp", ".h", ".inc", ".cu"):
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            text = strip_comments(source)
            # Comments: the characters strip_comments blanked out.
            for m in COMMENT.finditer(source):
                if text[m.start():m.end()].strip() == "" and NICKNAME.search(m.group(0)):
                    line = source.count("\n", 0, m.start()) + 1
                    offenders.append(f"{path.relative_to(root)}:{line}: comment calls a reference text 'the seed': "
                                     f"{m.group(0)[:100]!r}")
            for m in LITERAL.finditer(text):
                literal = m.group(2) if m.group(2) is not None else m.group(3)
                if literal and bad(literal):
                    line = text.count("\n", 0, m.start()) + 1
                    offenders.append(f"{path.relative_to(root)}:{line}: \"{literal}\"")
    # What a user reads from the shipped JSON: preset texts and labels, profile descriptions.
    for path in sorted((root / "resources").rglob("*.json")):
        def walk(value, where):
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(v, f"{where}.{k}")
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    walk(v, f"{where}[{i}]")
            elif isinstance(value, str) and bad(value):
                offenders.append(f"{path.relative_to(root)}: {where}: \"{value[:120]}\"")
        walk(json.loads(path.read_text(encoding="utf-8")), "")
    for o in offenders:
        print(o)
    if offenders:
        print(f"{len(offenders)} product string(s) say 'seed' for something other than the random seed; "
              "name what the number is ('formula', 'predicted (ZeRO paper)') or say 'random seed'")
        return 1
    print("product strings: 'seed' only for the random seed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
