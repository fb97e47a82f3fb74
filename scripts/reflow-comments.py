#!/usr/bin/env python3
"""Rewraps the Swift comments that `swift format` leaves over the line length: it breaks code, never a comment.

    scripts/reflow-comments.py [--check] [--width 150] PATH...      (files, or folders searched for *.swift)

A paragraph of a `///` or `//` comment run with a line over the width is filled again to the width, with the run's
indentation and marker. Blank comment lines, list items (`-`, `*`, `+`, `1.`, and so `- Parameter x:`, `- Returns:`),
fenced and indented code blocks, `// MARK:`-style directives and lines with no space to break at are kept as they are;
a list item's continuation lines keep their hanging indentation. An end-of-line comment that makes its line too long
moves to its own line above the code. Lines inside multi-line string literals are never touched.

With --check nothing is written: the files with a comment to rewrap are listed (exit status 1 when there is one), and
the lines over the width are counted. Standard library only.
"""
import argparse
import os
import re
import sys

COMMENT = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>///|//)(?P<rest>.*)$")
LIST_ITEM = re.compile(r"^(?P<bullet>(?:[-*+]|\d+[.)])[ \t]+)")
DIRECTIVE = re.compile(r"^(MARK|TODO|FIXME|swift-format-ignore|swift-tools-version|===|---)")


def string_state(line, inside):
    """Whether a multi-line string literal is still open after `line`, given whether one was open before it, and
    the column of an end-of-line `//` comment outside any string (or None)."""
    i, n = 0, len(line)
    in_string = False
    raw = ""
    comment = None
    while i < n:
        if inside:
            end = line.find('"""', i)
            if end < 0:
                return True, None
            i = end + 3
            inside = False
            continue
        c = line[i]
        if in_string:
            if c == "\\" and not raw:
                i += 2
                continue
            if c == '"' and line.startswith(raw, i + 1):
                in_string = False
                i += 1 + len(raw)
                continue
            i += 1
            continue
        if line.startswith("//", i):
            comment = i
            break
        if line.startswith("/*", i):
            break
        m = re.match(r'(#*)"""', line[i:])
        if m:
            inside = True
            i += len(m.group(0))
            continue
        m = re.match(r'(#*)"', line[i:])
        if m:
            in_string = True
            raw = m.group(1)
            i += len(m.group(0))
            continue
        i += 1
    return inside, comment


def fill(words, first_prefix, next_prefix, width):
    lines, current, prefix = [], "", first_prefix
    for word in words:
        if current and len(prefix) + len(current) + 1 + len(word) > width:
            lines.append(prefix + current)
            current, prefix = word, next_prefix
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(prefix + current)
    return lines


def reflow_run(run, width):
    """`run`: the lines of one comment run (same indentation and marker). Returns the new lines."""
    m = COMMENT.match(run[0])
    base = m.group("indent") + m.group("marker")
    out, paragraph, in_fence = [], [], False
    # A paragraph: (the first line's prefix, the continuation prefix, the words, the original lines).

    def flush():
        if not paragraph:
            return
        first, following, words, original = paragraph[0]
        if any(len(line) > width for line in original) and words:
            out.extend(fill(words, first, following, width))
        else:
            out.extend(original)
        paragraph.clear()

    for line in run:
        text = line[len(base):]
        body = text[1:] if text.startswith(" ") else text
        stripped = body.strip()
        if stripped.startswith("```"):
            flush()
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence or not stripped or body.startswith("    ") and not paragraph or DIRECTIVE.match(stripped) \
                or not text.startswith(" "):
            flush()
            out.append(line)
            continue
        item = LIST_ITEM.match(body.lstrip())
        lead = len(body) - len(body.lstrip())
        if item:
            flush()
            hang = " " * (lead + len(item.group("bullet")))
            paragraph.append((base + " " + body[:lead + len(item.group("bullet"))], base + " " + hang,
                              body[lead + len(item.group("bullet")):].split(), [line]))
            continue
        if paragraph:
            paragraph[0][2].extend(body.split())
            paragraph[0][3].append(line)
            continue
        paragraph.append((base + " " + body[:lead], base + " " + body[:lead], body.split(), [line]))
    flush()
    return out


def reflow(lines, width):
    out, i, inside = [], 0, False
    while i < len(lines):
        line = lines[i]
        m = COMMENT.match(line) if not inside else None
        if m and not m.group("rest").startswith("/"):
            j = i
            while j < len(lines):
                n = COMMENT.match(lines[j])
                if not n or n.group("indent") != m.group("indent") or n.group("marker") != m.group("marker") \
                        or n.group("rest").startswith("/"):
                    break
                j += 1
            out.extend(reflow_run(lines[i:j], width))
            i = j
            continue
        was_inside = inside
        inside, comment = string_state(line, inside)
        if not was_inside and comment is not None and len(line) > width and line[:comment].strip():
            indent = re.match(r"[ \t]*", line).group(0)
            out.extend(reflow_run([indent + line[comment:].rstrip()], width))
            out.append(line[:comment].rstrip())
        else:
            out.append(line)
        i += 1
    return out


def swift_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                yield from (os.path.join(folder, f) for f in sorted(files) if f.endswith(".swift"))
        else:
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; list what is over the width")
    parser.add_argument("--width", type=int, default=150)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    rewrapped, over = 0, 0
    for path in swift_files(args.paths):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        new = reflow(lines, args.width)
        if new != lines:
            rewrapped += 1
            if args.check:
                print(f"{path}: comments over {args.width} characters (scripts/format.sh rewraps them)")
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(new))
        over += sum(len(line) > args.width for line in new)
    if args.check:
        print(f"{rewrapped} file(s) with comments to rewrap; {over} line(s) over {args.width} characters after it (code "
              "swift format cannot break: string literals)")
        return 1 if rewrapped else 0
    print(f"rewrapped comments in {rewrapped} file(s); {over} line(s) still over {args.width} characters (code swift format "
          "cannot break: string literals)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
