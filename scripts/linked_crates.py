"""`cargo metadata` on stdin -> the crates compiled into rollway._rollway (the normal dependencies
reachable from rollway-python; build scripts and tests are not shipped) with their declared
licenses, one per line (scripts/wheel-notices.sh)."""

import json
import sys

meta = json.load(sys.stdin)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = next(i for i, p in packages.items() if p["name"] == "rollway-python")
seen, todo = set(), [root]
while todo:
    node = nodes[todo.pop()]
    if node["id"] in seen:
        continue
    seen.add(node["id"])
    for dep in node["deps"]:
        if any(k["kind"] is None for k in dep["dep_kinds"]):
            todo.append(dep["pkg"])
print("Rust crates compiled into rollway._rollway (name version: license as the crate declares it);")
print("dependencies of other platforms (Windows, macOS, Android) are listed too but not compiled on Linux.\n")
for p in sorted((packages[i] for i in seen), key=lambda p: (p["name"], p["version"])):
    print(f"{p['name']} {p['version']}: {p.get('license') or 'see ' + str(p.get('license_file'))}")
