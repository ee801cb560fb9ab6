#!/usr/bin/env python3
"""A plugin for the misbehaviour catalogue: a correct plugin over a JSON file of records, which
misbehaves as `settings.misbehave` says, on the method it names, while the file named by
`settings.switch` exists (so a test can make it behave again).

misbehave: {"method": "hello"|"list"|"read"|"write", "how": "...", "after": N}
"""
import json
import os
import signal
import sys
import time

settings = {}
store_path = None


def load():
    try:
        with open(store_path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def save(records):
    temporary = store_path + ".tmp"
    with open(temporary, "w") as handle:
        json.dump(records, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, store_path)


def write(params):
    records = load()
    for record in params.get("saves") or []:
        records[record["recordName"]] = record
    for key in params.get("deletes") or []:
        records.pop(key["recordName"], None)
    save(records)


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


calls = {}


def misbehaving(method):
    rule = settings.get("misbehave") or {}
    if rule.get("method") != method:
        return None
    switch = settings.get("switch")
    if switch and not os.path.exists(switch):
        return None
    calls[method] = calls.get(method, 0) + 1
    if calls[method] <= rule.get("after", 0):
        return None
    return rule.get("how")


def main():
    global settings, store_path
    for line in sys.stdin:
        message = json.loads(line)
        ident, method, params = message.get("id"), message.get("method"), message.get("params") or {}
        if method == "hello":
            settings = params.get("settings") or {}
            directory = params.get("scratch") or settings["directory"]
            os.makedirs(directory, exist_ok=True)
            store_path = os.path.join(directory, "records.json")
        how = misbehaving(method)
        if how == "crash":
            os._exit(3)
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "hang":
            time.sleep(3600)
        if how == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            continue
        if how == "array":
            send([1, 2, 3])
            continue
        if how == "oversized":
            sys.stdout.write('{"id": %d, "result": {"records": [], "padding": "%s"}}\n' % (ident, "x" * 300000))
            sys.stdout.flush()
            continue
        if how == "wrong-id":
            send({"id": ident + 100, "result": {}})
            continue
        if how == "no-result":
            send({"id": ident})
            continue
        if how == "error":
            send({"id": ident, "error": {"code": "diskFull", "message": "the disk is full"}})
            continue
        if how == "close-stdout":
            sys.stdout.close()
            os.close(1)
            time.sleep(3600)
        if how == "stderr-noise":
            sys.stderr.write("plugin says: working on %s\n" % method)
            sys.stderr.flush()
        if how == "write-then-crash" and method == "write":
            # Writes everything durably, then dies before answering.
            write(params)
            os._exit(5)
        if how == "partial-write-crash" and method == "write":
            records = load()
            first = (params.get("saves") or [None])[0]
            if first:
                records[first["recordName"]] = first
                save(records)
            os._exit(4)

        if method == "hello":
            if how == "wrong-protocol":
                send({"id": ident, "result": {"protocol": 99, "recordTypes": [{"name": "Note"}]}})
                continue
            if how == "no-types":
                send({"id": ident, "result": {"protocol": 1}})
                continue
            send({"id": ident, "result": {"protocol": 1, "plugin": "misbehaving 1.0", "capabilities": {"cursor": False},
                                          "recordTypes": [{"name": "Note", "fields": ["title", "rank"]}],
                                          "scratch": bool(params.get("scratch"))}})
        elif method == "list":
            records = list(load().values())
            if how == "unknown-type":
                records.append({"recordName": "stranger", "recordType": "Alien", "fields": {}})
            if how == "bad-name":
                records.append({"recordName": "bad\nname", "recordType": "Note", "fields": {}})
            if how == "duplicate":
                records.append({"recordName": "twice", "recordType": "Note", "fields": {}})
                records.append({"recordName": "twice", "recordType": "Note", "fields": {}})
            if how == "ghost":
                # Listed, with a version, but never returned by read.
                records.append({"recordName": "ghost", "recordType": "Note", "version": "g1"})
            if how == "bad-field":
                records.append({"recordName": "badfield", "recordType": "Note", "fields": {"rank": {"value": "abc", "type": "INT64"}}})
            if how == "no-records":
                send({"id": ident, "result": {"complete": True}})
                continue
            if how == "bad-deleted":
                send({"id": ident, "result": {"records": records, "deleted": "everything"}})
                continue
            send({"id": ident, "result": {"records": records, "complete": True}})
        elif method == "read":
            records = load()
            send({"id": ident, "result": {"records": [records[k["recordName"]] for k in params["records"] if k["recordName"] in records]}})
        elif method == "write":
            write(params)
            if how == "bad-ack":
                send({"id": ident, "result": {"records": "all of them"}})
                continue
            send({"id": ident, "result": {}})
        else:
            send({"id": ident, "error": {"code": "unknownMethod", "message": method}})


if __name__ == "__main__":
    main()
