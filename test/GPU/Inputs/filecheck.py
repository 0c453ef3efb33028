#!/usr/bin/env python3
"""A stand-in for LLVM's FileCheck, for the GPU machine, which has no LLVM (the real
FileCheck needs libLLVM and libz3, about 150 MB): the GPU bundle (scripts/gpu-bundle.sh)
ships this file as tools/FileCheck, so the GPU tests' check lines run there unchanged.

It implements the part of FileCheck the GPU tests use, with FileCheck's semantics:
  --check-prefix P, --check-prefixes P,Q (default CHECK), --input-file F (default stdin),
  --allow-empty; directives P:, P-NEXT:, P-SAME:, P-EMPTY:, P-NOT:; patterns with
  {{regex}}, [[NAME:regex]] (defines NAME) and [[NAME]] (uses it); runs of spaces and
  tabs match any run of them, and a pattern's ends are trimmed (no --strict-whitespace).
Anything else (other options, -DAG, -LABEL, -COUNT, numeric [[#...]]) is refused with
an error rather than approximated, so a test that passes here means what it means
under FileCheck. test/GPU/filecheck-standin.test holds it to FileCheck's verdicts.
Regexes are Python's, which agree with FileCheck's POSIX ERE on the forms used here."""
import re
import sys

KINDS = ("NEXT", "SAME", "EMPTY", "NOT")
UNSUPPORTED = ("DAG", "LABEL", "COUNT")


def fail(msg):
    sys.stderr.write("FileCheck (stand-in): error: " + msg + "\n")
    sys.exit(1)


def parse_args(argv):
    opts = {"prefixes": [], "input": None, "allow_empty": False, "check_file": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        value = None
        name = arg.split("=", 1)[0]
        if name in ("--check-prefix", "-check-prefix", "--check-prefixes", "-check-prefixes",
                    "--input-file", "-input-file"):
            if "=" in arg:
                value = arg.split("=", 1)[1]
            else:
                i += 1
                if i == len(argv):
                    fail(f"{arg} needs a value")
                value = argv[i]
            if "prefix" in name:
                opts["prefixes"] += [p for p in value.split(",")]
            else:
                opts["input"] = value
        elif arg in ("--allow-empty", "-allow-empty"):
            opts["allow_empty"] = True
        elif arg.startswith("-"):
            fail(f"option {arg} is not supported by this stand-in")
        elif opts["check_file"] is None:
            opts["check_file"] = arg
        else:
            fail(f"unexpected argument {arg}")
        i += 1
    if opts["check_file"] is None:
        fail("no check file given")
    if not opts["prefixes"]:
        opts["prefixes"] = ["CHECK"]
    for p in opts["prefixes"]:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", p):
            fail(f"invalid check prefix '{p}'")
    return opts


def canon(text):
    """FileCheck's default: a run of horizontal whitespace is one space."""
    return re.sub(r"[ \t]+", " ", text)


def var_end(pat, i):
    """Where the ]] closing a [[...]] that starts at i is, skipping brackets of its regex
    (as FileCheck's FindRegexVarEnd does: [[X:[0-9]]] is X matching [0-9]); -1 if none."""
    depth = 0
    while i < len(pat):
        if pat.startswith("]]", i) and depth == 0:
            return i
        if pat[i] == "\\":
            i += 1
        elif pat[i] == "[":
            depth += 1
        elif pat[i] == "]":
            depth -= 1
            if depth < 0:
                return -1
        i += 1
    return -1


class Check:
    def __init__(self, kind, pattern, lineno):
        self.kind, self.pattern, self.lineno = kind, pattern, lineno

    def regex(self, variables, defining):
        """The pattern as a Python regex; `defining` collects the [[NAME:re]] groups."""
        out, i, pat = [], 0, self.pattern
        while i < len(pat):
            if pat.startswith("{{", i):
                end = pat.find("}}", i + 2)
                if end < 0:
                    fail(f"line {self.lineno}: unterminated {{{{ in '{pat}'")
                out.append("(?:" + pat[i + 2:end] + ")")
                i = end + 2
            elif pat.startswith("[[", i):
                end = var_end(pat, i + 2)
                if end < 0:
                    fail(f"line {self.lineno}: unterminated [[ in '{pat}'")
                body = pat[i + 2:end]
                if body.startswith("#") or body.startswith("@"):
                    fail(f"line {self.lineno}: [[{body}]] (numeric or pseudo variables) is not supported")
                if ":" in body:
                    name, rx = body.split(":", 1)
                    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                        fail(f"line {self.lineno}: bad variable name '{name}'")
                    group = f"v{len(defining)}"
                    defining.append((group, name))
                    out.append(f"(?P<{group}>{rx})")
                elif any(n == body for _, n in defining):  # defined earlier in this pattern
                    out.append(f"(?P={[g for g, n in defining if n == body][-1]})")
                else:
                    if body not in variables:
                        fail(f"line {self.lineno}: variable [[{body}]] used before it is defined")
                    out.append(re.escape(variables[body]))
                i = end + 2
            else:
                j = i
                while j < len(pat) and not pat.startswith("{{", j) and not pat.startswith("[[", j):
                    j += 1
                out.append(re.escape(canon(pat[i:j])))
                i = j
        try:
            return re.compile("".join(out))
        except re.error as e:
            fail(f"line {self.lineno}: bad regex in '{pat}': {e}")


def read_checks(path, prefixes):
    alternatives = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))
    directive = re.compile(r"(?<![A-Za-z0-9_-])(" + alternatives + r")(-[A-Z]+(?:-[0-9]+)?)?:")
    checks = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = directive.search(line)
            if not m:
                continue
            suffix = (m.group(2) or "")[1:]
            if suffix.split("-")[0] in UNSUPPORTED:
                fail(f"{path}:{lineno}: {m.group(1)}-{suffix} is not supported by this stand-in")
            if suffix and suffix not in KINDS:
                continue  # not a directive (FileCheck ignores e.g. CHECK-FOO: too)
            pattern = line[m.end():].rstrip("\n").strip(" \t")
            kind = suffix or "CHECK"
            if not pattern and kind != "EMPTY":
                fail(f"{path}:{lineno}: found empty check string with prefix '{m.group(1)}:'")
            if kind == "EMPTY" and pattern:
                fail(f"{path}:{lineno}: found non-empty check string for empty check with prefix '{m.group(1)}:'")
            if not checks and kind in ("NEXT", "SAME", "EMPTY"):
                fail(f"{path}:{lineno}: found '{m.group(1)}-{kind}' without previous '{m.group(1)}: line")
            checks.append(Check(kind, pattern, lineno))
    if not checks:
        fail(f"no check strings found with prefix{'es' if len(prefixes) > 1 else ''} "
             + ", ".join(p + ":" for p in prefixes))
    return checks


def main():
    opts = parse_args(sys.argv[1:])
    checks = read_checks(opts["check_file"], opts["prefixes"])
    if opts["input"]:
        with open(opts["input"], encoding="utf-8", errors="replace") as f:
            text = f.read()
    else:
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not text and not opts["allow_empty"]:
        fail("'" + (opts["input"] or "<stdin>") + "' is empty")
    lines = [canon(l) for l in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    variables = {}
    pos = (0, 0)           # where the next search starts: (line, column)
    prev_line = -1         # line of the previous positive match
    pending_not = []

    def search(rx, start, only_line=None):
        line, col = start
        last = len(lines) - 1 if only_line is None else only_line
        while line <= last and line < len(lines):
            m = rx.search(lines[line], col)
            if m:
                return line, m
            line, col = line + 1, 0
        return None

    def check_nots(until):
        for c in pending_not:
            rx = c.regex(variables, [])
            hit = search(rx, pos)
            if hit and (hit[0], hit[1].start()) < until:
                fail(f"{opts['check_file']}:{c.lineno}: {c.pattern!r} must not occur, but input line "
                     f"{hit[0] + 1} has it: {lines[hit[0]]!r}")
        pending_not.clear()

    for c in checks:
        if c.kind == "NOT":
            pending_not.append(c)
            continue
        if c.kind == "EMPTY":
            line = prev_line + 1
            if line >= len(lines) or lines[line] != "":
                got = repr(lines[line]) if line < len(lines) else "the end of the input"
                fail(f"{opts['check_file']}:{c.lineno}: expected an empty line after input line "
                     f"{prev_line + 1}, got {got}")
            check_nots((line, 0))
            pos, prev_line = (line + 1, 0), line
            continue
        defining = []
        rx = c.regex(variables, defining)
        hit = search(rx, pos, only_line=pos[0] if c.kind == "SAME" else None)
        if not hit:
            where = f"input line {pos[0] + 1}" if pos[0] < len(lines) else "the end of the input"
            fail(f"{opts['check_file']}:{c.lineno}: {c.kind}: expected string not found from {where}: "
                 f"{c.pattern!r}")
        line, m = hit
        if c.kind == "NEXT" and line != prev_line + 1:
            fail(f"{opts['check_file']}:{c.lineno}: NEXT: {c.pattern!r} matched input line {line + 1}, "
                 f"not the line after the previous match (line {prev_line + 1})")
        check_nots((line, m.start()))
        for group, name in defining:
            variables[name] = m.group(group)
        pos, prev_line = (line, m.end()), line
    check_nots((len(lines), 0))


if __name__ == "__main__":
    main()
