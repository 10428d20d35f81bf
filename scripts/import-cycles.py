#!/usr/bin/env python3
"""Lists the import circles among a crate's modules (docs/architecture.md, "Imports inside a crate").

    scripts/import-cycles.py [crate src dir, default crates/server/src] [--top]

An edge A -> B means module A names module B: in a `use` tree, or in a `crate::…`,
`super::…`, `self::…` path in code, or through a name a `use` bound to a module (`store::x`
after `use crate::store`). Comments, strings and `#[cfg(test)]` items are left out, and so
are modules declared only for tests. Each module is one file (`turn::core` is
`turn/core.rs`); with `--top` a module counts as its top-level module, its files together
(`turn::core` is `turn`), the way the crate's layers are drawn. Prints every strongly
connected group of modules with its elementary circles; exits 1 when there is one. The
crate root is `lib.rs`, or `main.rs` when the crate is only a binary.
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(src):
    """The code of `src` with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif m := re.match(r'b?r(#*)"', src[i:]) if c in "br" and (i == 0 or not re.match(r"\w", src[i - 1])) else None:
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not re.match(r"\w", src[i - 1]))):
            i = src.index('"', i) + 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'":
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", src[i:], re.S)
            if m:
                i += m.end()
                out.append("' '")
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def item_end(code, i):
    """Index just past the item starting at `i`: its `;` or its brace block."""
    depth = 0
    while i < len(code):
        c = code[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return i + 1
        elif c == "{" and depth == 0:
            level = 0
            while i < len(code):
                level += {"{": 1, "}": -1}.get(code[i], 0)
                i += 1
                if level == 0:
                    return i
        i += 1
    return i


def drop_test_items(code):
    """`code` without the items under `#[cfg(test)]` (and their other attributes)."""
    while m := re.search(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", code):
        i = m.end()
        while a := re.match(r"\s*#\s*\[", code[i:]):  # its other attributes
            i, depth = i + a.end(), 1
            while depth:
                depth += {"[": 1, "]": -1}.get(code[i], 0)
                i += 1
        code = code[: m.start()] + code[item_end(code, i) :]
    return code


def use_paths(tree):
    """The leaves of a `use` tree as (path segments, bound name or None for a glob)."""
    tree = re.sub(r"\s+", "", tree.replace(" as ", "@"))

    def walk(prefix, t):
        depth, start, parts = 0, 0, []
        for k, c in enumerate(t):
            depth += {"{": 1, "}": -1}.get(c, 0)
            if c == "," and depth == 0:
                parts.append(t[start:k])
                start = k + 1
        parts.append(t[start:])
        for p in filter(None, parts):
            if "{" in p:
                head = p[: p.index("{")].rstrip(":")
                segs = [s for s in head.split("::") if s]
                yield from walk(prefix + segs, p[p.index("{") + 1 : p.rindex("}")])
                continue
            name = None
            if "@" in p:
                p, name = p.split("@")
            segs = prefix + [s for s in p.split("::") if s]
            if segs[-1] == "*":
                yield segs[:-1], None
            elif segs[-1] == "self":
                yield segs[:-1], name or segs[-2]
            else:
                yield segs, name or segs[-1]

    yield from walk([], tree)


def modules(src_dir):
    """Every module of the crate (a tuple of names, () the root) with its code and whether it
    is public (a private one can be named only inside its parent)."""
    found = {}

    def visit(path, file, own_dir, public=True):
        code = drop_test_items(strip(file.read_text()))
        found[path] = (code, public)
        for vis, name in re.findall(rf"(\bpub\b[^;{{}}]*?)?\bmod\s+({IDENT})\s*;", code):
            for f, d in ((own_dir / f"{name}.rs", own_dir / name), (own_dir / name / "mod.rs", own_dir / name)):
                if f.exists():
                    visit(path + (name,), f, d, bool(vis))
                    break

    # The crate root: `lib.rs`, or `main.rs` for a crate that is only a binary (the cli). A
    # crate with both is read from `lib.rs`: its `main.rs` is a separate crate using it.
    root = next((f for f in (src_dir / "lib.rs", src_dir / "main.rs") if f.exists()), None)
    if root is None:
        sys.exit(f"{src_dir}: no lib.rs or main.rs (give a crate's src directory)")
    visit((), root, src_dir)
    return found


def graph(mods):
    """Edges between modules: {module: {module it names}}."""
    edges = {m: set() for m in mods}
    for mod, (code, _) in mods.items():
        children = {m[-1] for m in mods if m[:-1] == mod and m}

        def resolve(segs):
            head, rest = segs[0], segs[1:]
            if head == "crate":
                base = ()
            elif head == "self":
                base = mod
            elif head == "super":
                base = mod[:-1]
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
            elif head in children:
                base, rest = mod, segs
            elif head in aliases:
                base = aliases[head]
            else:
                return None  # another crate, or an item
            full = base + tuple(rest)
            # The longest prefix that is a module `mod` may name (`store::messages(c)` from
            # outside `store` calls a function, not the private module of the same name).
            while full not in mods or not (mods[full][1] or mod[: len(full) - 1] == full[:-1]):
                full = full[:-1]
            return full

        aliases = {}
        uses = list(re.finditer(r"\buse\s+([^;]+);", code))
        for m in uses:
            for segs, name in use_paths(m.group(1)):
                target = resolve(segs)
                if target is None:
                    continue
                edges[mod].add(target)
                if name and target == resolve(segs) and tuple(target[-1:]) == tuple(segs[-1:]):
                    aliases[name] = target
        body = re.sub(r"\buse\s+[^;]+;", ";", code)
        for m in re.finditer(rf"(?<![\w:]){IDENT}(?:\s*::\s*{IDENT})+", body):
            target = resolve(re.split(r"\s*::\s*", m.group(0)))
            if target is not None:
                edges[mod].add(target)
        edges[mod].discard(mod)
    return edges


def collapse(edges):
    """The same edges between top-level modules."""
    top = {}
    for a, bs in edges.items():
        ta = a[:1]
        top.setdefault(ta, set()).update(b[:1] for b in bs if b[:1] != ta)
    return top


def circles(edges):
    """Strongly connected groups (more than one module) with their elementary circles."""
    index, low, stack, on, groups = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    result = []
    for group in groups:
        members, found = set(group), []
        for start in group:  # circles whose least member is `start`
            def walk(path):
                for w in sorted(edges[path[-1]] & members):
                    if w == start:
                        found.append(path + [start])
                    elif w > start and w not in path:
                        walk(path + [w])

            walk([start])
        result.append((group, found))
    return result


def name(mod):
    return "crate::" + "::".join(mod) if mod else "crate"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = Path(args[0] if args else "crates/server/src")
    edges = graph(modules(src))
    if "--top" in sys.argv:
        edges = collapse(edges)
    found = circles(edges)
    for group, loops in found:
        print("circle group:", ", ".join(name(m) for m in group))
        for loop in loops:
            print("   ", " -> ".join(name(m) for m in loop))
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} edges, {len(found)} circle groups")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
