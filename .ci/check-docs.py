#!/usr/bin/env python3
"""Every public declaration of the documented modules has a doc comment of its own or inherits
one from the protocol requirement it implements. Reads the symbol graphs that
`swift package generate-documentation` extracted; names each undocumented declaration with its
file and line. Synthesized conformances (Equatable, Hashable, Codable) have no source to document
and are left out."""
import json
import os
import sys

SYNTHESIZED = {"hashValue", "hash(into:)", "==(_:_:)", "!=(_:_:)", "init(from:)", "encode(to:)"}
root = os.getcwd()
missing = []
for module in sys.argv[1:]:
    folder = f".build/x86_64-unknown-linux-gnu/extracted-symbols/main/{module}"
    if not os.path.isdir(folder):
        folder = next(
            (os.path.join(dirpath) for dirpath, _, files in os.walk(".build") if f"{module}.symbols.json" in files), None)
    if folder is None:
        sys.exit(f"error: no symbol graph for {module}; run swift package generate-documentation --target {module} first")
    for name in os.listdir(folder):
        graph = json.load(open(os.path.join(folder, name)))
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            if symbol.get("docComment") or symbol.get("sourceOrigin") or symbol["names"]["title"] in SYNTHESIZED:
                continue
            location = symbol.get("location")
            if not location:
                continue
            path = location["uri"].removeprefix("file://").removeprefix(root + "/")
            missing.append(f"{path}:{location['position']['line'] + 1}: {'.'.join(symbol['pathComponents'])}")
    print(f"{module}: checked")
if missing:
    print(f"error: {len(missing)} public declarations without documentation:", file=sys.stderr)
    for line in sorted(set(missing)):
        print("  " + line, file=sys.stderr)
    sys.exit(1)
