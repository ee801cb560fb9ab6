#!/usr/bin/env python3
"""A Sync Gateway resolver process: the longer text wins, lists are unioned.

Used with `merge_policy: custom` and `merge_resolver: longer-text` naming this program under
`resolvers:` in config.yaml (see config.yaml beside this file). For each conflict the gateway
sends both versions of the record and which fields each side changed since they last agreed; the
answer keeps every field only one side changed, and for a field both changed takes the longer
text, the union of two lists (in order, without repeats), or else the server's value. A record
deleted on one side and edited on the other keeps the edit.

Only the Python standard library is used. Protocol: docs/writing-adapters.md ("Resolver
processes") in the Sync Gateway repository.
"""
import json
import sys

PROTOCOL = 1


def value_of(record, name):
    """The field object {"value", "type"} of `record`, or None."""
    if record is None:
        return None
    field = (record.get("fields") or {}).get(name)
    if field is None or field.get("value") is None:
        return None
    return field


def resolve(conflict):
    local, server = conflict.get("local"), conflict.get("server")
    name = conflict["recordName"]
    if local is None or server is None:
        # A deletion met by an edit: the edit is kept.
        return {"recordName": name, "take": "local" if local is not None else "server"}
    changed_locally = set(conflict.get("changedLocally") or [])
    changed_on_server = set(conflict.get("changedOnServer") or [])
    names = set((local.get("fields") or {}).keys()) | set((server.get("fields") or {}).keys())
    fields = {}
    for field in sorted(names):
        mine, theirs = value_of(local, field), value_of(server, field)
        if field in changed_locally and field not in changed_on_server:
            chosen = mine
        elif field in changed_on_server and field not in changed_locally:
            chosen = theirs
        elif mine is None or theirs is None:
            chosen = mine if theirs is None else theirs
        elif mine.get("type") == "STRING" and theirs.get("type") == "STRING":
            chosen = mine if len(mine["value"]) > len(theirs["value"]) else theirs
        elif isinstance(mine.get("value"), list) and isinstance(theirs.get("value"), list) and mine.get("type") == theirs.get("type"):
            union = list(theirs["value"])
            for item in mine["value"]:
                if item not in union:
                    union.append(item)
            chosen = {"value": union, "type": theirs["type"]}
        else:
            chosen = theirs
        fields[field] = chosen  # None goes as null: every field either side holds is named
    return {"recordName": name, "fields": fields}


def main():
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        ident, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if method == "hello":
            answer = {"id": ident, "result": {"protocol": PROTOCOL, "resolver": "longer-text 1.0"}}
        elif method == "resolve":
            answer = {"id": ident, "result": {"resolutions": [resolve(c) for c in params.get("conflicts") or []]}}
        else:
            answer = {"id": ident, "error": {"code": "unknownMethod", "message": "this resolver does not know " + str(method)}}
        out.write(json.dumps(answer, separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
