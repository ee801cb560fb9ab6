#!/usr/bin/env python3
"""A Sync Gateway processor process: a computed field.

On the way out (store to zone) every record with a text `body` gets `wordCount`, the number of
words in it, so other programs reading the zone can sort or filter on it; on the way in (zone to
store) `wordCount` is taken out again, since the stores compute it themselves and have no column
for it. What goes out and comes back is the record it was, which is what the gateway asks of a
processor.

Used with `processors: [{kind: process, processor: word-count}]` naming this program under the
config's `processors:` (see config.yaml beside this file). Only the Python standard library is
used. Protocol: docs/writing-adapters.md ("Processor processes") in the Sync Gateway repository.
"""
import json
import sys

PROTOCOL = 1
FIELD = "wordCount"


def outgoing(record):
    fields = record.get("fields") or {}
    body = fields.get("body")
    if body is not None and body.get("type") == "STRING" and isinstance(body.get("value"), str):
        fields[FIELD] = {"value": len(body["value"].split()), "type": "INT64"}
    else:
        fields.pop(FIELD, None)
    record["fields"] = fields
    return record


def incoming(record):
    fields = record.get("fields") or {}
    fields.pop(FIELD, None)
    record["fields"] = fields
    return record


def main():
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        ident, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if method == "hello":
            answer = {"id": ident, "result": {"protocol": PROTOCOL, "processor": "word-count 1.0"}}
        elif method == "process":
            change = outgoing if params.get("direction") == "outgoing" else incoming
            answer = {"id": ident, "result": {"records": [change(r) for r in params.get("records") or []]}}
        else:
            answer = {"id": ident, "error": {"code": "unknownMethod", "message": "this processor does not know " + str(method)}}
        out.write(json.dumps(answer, separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
