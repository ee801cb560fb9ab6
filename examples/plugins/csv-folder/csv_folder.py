#!/usr/bin/env python3
"""A Sync Gateway process plugin: a folder of CSV files, one per record type.

`<directory>/<RecordType>.csv` holds one record per row. The first column is `recordName`; the
others are fields, their header `name:type` with type string (the default), int64, double,
timestamp (milliseconds since 1970), bytes (base64) or json (any CloudKit field object, kept as
is). A column is added, typed by its first value, when a record brings a new field. An empty cell
is no value, so an empty string (or one that starts like a field object, `{"type"…`) is kept as a
field object.

Only the Python standard library is used. Rows it cannot read (a wrong number of cells, a cell that
is not its column's type, a name two rows hold) are reported as problems, never as deletions,
and a file it created that goes missing is an error until it is back. The gateway keeps all sync state; this program only
lists, reads and writes rows, and keeps the gateway's identity marker in
`<directory>/.gateway-store.json` (so a restored copy of the folder is recognised as one). It
offers a cursor: while no other program touched the files since the last listing, a list answers
"no changes" at once instead of hashing every row (a change is seen from a file's modification
time, change time, size and inode). It takes writes as tables (a record type's fields and types
once, a row of values per record), which is what most of a large write costs to parse. Its writes
are conditional: a row whose version is no longer the one the gateway read (another program
edited it meanwhile) is left as it is and answered as held back, so that edit is never
overwritten.
Protocol: docs/writing-adapters.md in the Sync Gateway repository.
"""
import base64
import csv
import hashlib
import json
import os
import sys
import tempfile

PROTOCOL = 1
PAGE = 5000
csv.field_size_limit(1 << 30)


class Folder:
    def __init__(self, directory, record_types):
        self.directory = directory
        self.record_types = record_types
        self.cache = {}  # record type -> (stamp, columns, rows: {name: cells})
        self.snapshot = []  # the listing being paged
        self.versions = {}  # record type -> (rows it was computed for, {name: version})
        # The cursor: a listing's answer tells the gateway everything up to a state of each
        # file; later lists with that cursor answer "no changes" while every file is still in
        # that state or in one this program wrote for the gateway (which knows those records from
        # the write's answer; a write marked "edit" stands for another program's). Anything else,
        # a restart included, lists everything again.
        self.session = os.urandom(8).hex()
        self.issued = 0  # the number in the last cursor handed out
        self.trusted = {}  # record type -> stamp of a file state the gateway has seen whole
        self.listed = {}  # record type -> stamp of the file state the paged listing was made of
        self.problems = {}  # record type -> ({record name: why its row cannot be read}, why the whole file cannot be)
        os.makedirs(directory, exist_ok=True)
        self.create_files()

    def create_files(self):
        """Creates, holding only a header, the file of each record type this folder never had, and
        remembers which it made in `.csv-folder.json`. A remembered file that is missing later was
        moved or deleted: listing it as empty would delete every record of its type everywhere, so
        it is an error until the file is back (or created again, header only, to delete them)."""
        known_path = os.path.join(self.directory, ".csv-folder.json")
        try:
            with open(known_path) as handle:
                known = set(json.load(handle).get("files", []))
        except (FileNotFoundError, ValueError):
            known = set()
        made = [record_type for record_type in self.record_types if record_type not in known]
        if not made:
            return
        for record_type in made:
            if self.stamp(record_type) is None:
                with open(self.path(record_type), "w", newline="", encoding="utf-8") as handle:
                    handle.write("recordName\n")
                    handle.flush()
                    os.fsync(handle.fileno())
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".csv-folder.")
        with os.fdopen(handle, "w") as out:
            json.dump({"files": sorted(known | set(made))}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, known_path)

    def stamp(self, record_type):
        try:
            stat = os.stat(self.path(record_type))
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)

    def cursor(self):
        return "%s:%d" % (self.session, self.issued)

    def path(self, record_type):
        return os.path.join(self.directory, record_type + ".csv")

    def load(self, record_type):
        path = self.path(record_type)
        stamp = self.stamp(record_type)
        if stamp is None:
            missing = record_type + ".csv is missing: put it back (or create it holding only its header line to delete every " + record_type + " record)"
            self.problems[record_type] = ({}, missing)
            return [], {}
        cached = self.cache.get(record_type)
        if cached and cached[0] == stamp:
            return cached[1], cached[2]
        file_name = record_type + ".csv"
        try:
            columns, rows, bad, whole = self.parse(path, file_name)
        except UnicodeDecodeError:
            columns, rows, bad = [], {}, {}
            with open(path, "rb") as raw:
                data = raw.read()
            try:
                data.decode("utf-8")
                at = "somewhere"
            except UnicodeDecodeError as failure:
                at = "line %d" % (data[:failure.start].count(b"\n") + 1)
            whole = "%s is not UTF-8 text (%s): save it as UTF-8" % (file_name, at)
        except csv.Error as failure:
            # Strict reading: a quote left open would otherwise take every later row into one cell.
            columns, rows, bad = [], {}, {}
            whole = "%s cannot be read as CSV (%s): fix the file" % (file_name, failure)
        if whole is not None and not rows:
            # Nothing of it is listed or written until it is fixed; what the gateway knows stays.
            self.problems[record_type] = ({}, whole)
            return [], {}
        self.problems[record_type] = (bad, whole)
        self.cache[record_type] = (stamp, columns, rows)
        self.versions.pop(record_type, None)
        return columns, rows

    def parse(self, path, file_name):
        """The columns, rows, unreadable rows and whole-file problem of one CSV file."""
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, strict=True)
            header = next(reader, None)
            if not header or header[0] != "recordName":
                # An empty file (a save that failed, `> Note.csv`) or one whose header went: its
                # rows cannot be told apart from deletions, or the first one would name fields.
                return [], {}, {}, (
                    "%s has no header line starting with recordName (%s): put the header back; to delete every record of the type, leave only the header"
                    % (file_name, "the file is empty" if not header else "its first line is a row"))
            columns = [parse_column(text) for text in header[1:]]
            names = [name for name, _ in columns]
            for index, name in enumerate(names):
                if name != "" and name in names[:index]:
                    # A repeated name would let the last column take the field's value.
                    return [], {}, {}, "%s header column %d repeats %s: name each column once" % (file_name, index + 2, name)
            nameless = [index for index, name in enumerate(names) if name == ""]
            rows = {}
            lines = {}  # record name -> the lines holding it
            bad = {}  # record name -> why its row cannot be read
            whole = None
            for cells in checked(reader):
                if not cells or cells == [""]:
                    continue
                name = cells[0]
                if not name:
                    # A row that lost its name cannot be told from one deleted: nothing is listed
                    # until it has one again.
                    whole = "%s line %d has no recordName: give the row its name back or remove it" % (file_name, reader.line_num)
                    continue
                lines.setdefault(name, []).append(reader.line_num)
                if len(cells) - 1 != len(columns):
                    bad[name] = "%s line %d has %d cells where its header has %d: fix the row" % (file_name, reader.line_num, len(cells), len(columns) + 1)
                else:
                    for (column, kind), cell in zip(columns, cells[1:]):
                        if cell != "" and not cell_is_readable(kind, cell):
                            bad[name] = "%s line %d, column %s: the cell is not a valid %s value: fix it" % (file_name, reader.line_num, column, kind)
                            break
                rows[name] = cells[1:] + [""] * (len(columns) - len(cells) + 1)
            # A quote opened in one row and closed rows later is valid CSV: the rows between
            # become one cell's text and would read as deleted. A cell holding a line that reads
            # as a row of this file (its cell count, a name shaped like the file's names) is
            # taken for that: the row and the names it swallowed are problems, kept as they were.
            shapes = {name_shape(name) for name in rows}
            for name, cells in list(rows.items()):
                swallowed = []
                for cell in cells:
                    if "\n" not in cell:
                        continue
                    for line in cell.split("\n")[1:]:
                        inner = next(csv.reader([line]), [])
                        if len(inner) == len(columns) + 1 and inner[0] and inner[0] not in rows and name_shape(inner[0]) in shapes:
                            swallowed.append(inner[0])
                if swallowed:
                    why = "%s: a quoted cell of %s holds lines that read as rows (%s): a quote was probably left open there; close it where the cell ends" % (
                        file_name, name, ", ".join(swallowed[:3]) + (", …" if len(swallowed) > 3 else ""))
                    bad[name] = why
                    for other in swallowed:
                        bad[other] = why
            for index in nameless:
                # A column without a name (a spreadsheet's trailing comma) is harmless while empty;
                # values in it would sync nowhere.
                if any(cells[index] != "" for cells in rows.values()):
                    return [], {}, {}, "%s header column %d has no name but holds values: name it" % (file_name, index + 2)
            for name, at in lines.items():
                if len(at) > 1:
                    bad[name] = "%s lines %s all hold record %s: keep one of them" % (file_name, ", ".join(map(str, at)), name)
        return columns, rows, bad, whole

    def check_readable(self, record_type):
        """Raises when the whole file cannot be listed."""
        self.load(record_type)
        whole = self.problems.get(record_type, ({}, None))[1]
        if whole is not None:
            raise PluginFailure("invalidFile", whole)

    def problem(self, record_type, name):
        """Why the row of `name` cannot be read, or None."""
        return self.problems.get(record_type, ({}, None))[0].get(name)

    def versions_of(self, record_type):
        """Each row's version, computed once per state of the file."""
        columns, rows = self.load(record_type)
        cached = self.versions.get(record_type)
        if cached is None or cached[0] is not rows:
            cached = (rows, {name: version(columns, cells) for name, cells in rows.items()})
            self.versions[record_type] = cached
        return cached[1]

    def record(self, record_type, name, columns, cells):
        fields = {}
        for (column, kind), cell in zip(columns, cells):
            if cell != "":
                fields[column] = decode_cell(kind, cell)
        return {"recordName": name, "recordType": record_type, "fields": fields, "version": version(columns, cells)}

    def listing(self, cursor, continuation):
        if continuation is None and cursor is not None and cursor == self.cursor():
            if all(record_type in self.trusted and self.trusted[record_type] == self.stamp(record_type) for record_type in self.record_types):
                return {"records": [], "deleted": [], "complete": False, "cursor": cursor, "continuation": None}
        if continuation is None:
            self.snapshot = []
            self.listed = {}
            for record_type in self.record_types:
                before = self.stamp(record_type)
                self.check_readable(record_type)
                for name, row_version in self.versions_of(record_type).items():
                    why = self.problem(record_type, name)
                    if why is None:
                        self.snapshot.append({"recordName": name, "recordType": record_type, "version": row_version})
                    else:
                        # Not offered, and not deleted either: the gateway keeps what it last read.
                        self.snapshot.append({"recordName": name, "recordType": record_type, "problem": {"code": "invalidRow", "message": why}})
                # Names a broken quote swallowed have no row of their own, and are not deleted.
                rows = self.load(record_type)[1]
                for name, why in sorted(self.problems.get(record_type, ({}, None))[0].items()):
                    if name not in rows:
                        self.snapshot.append({"recordName": name, "recordType": record_type, "problem": {"code": "invalidRow", "message": why}})
                # Trusted only if the file did not change while it was read.
                if before == self.stamp(record_type):
                    self.listed[record_type] = before
        start = 0
        if continuation is not None:
            # A continuation names the listing it pages: one from before a restart pages nothing
            # this process holds, and answering it as the end would read as every later record deleted.
            session, _, offset = str(continuation).partition(":")
            if session != self.session or not offset.isdigit():
                raise PluginFailure("staleContinuation", "this listing's continuation is from an earlier start of the plugin; list again")
            start = int(offset)
        page = self.snapshot[start:start + PAGE]
        following = start + PAGE if start + PAGE < len(self.snapshot) else None
        answer = {"records": page, "complete": True, "continuation": None if following is None else "%s:%d" % (self.session, following)}
        if following is None:
            self.issued += 1
            self.trusted = dict(self.listed)
            answer["cursor"] = self.cursor()
        return answer

    def read(self, keys):
        found = []
        loaded = {}  # one look at each file per request
        for key in keys:
            record_type = key["recordType"]
            if record_type not in loaded:
                loaded[record_type] = self.load(record_type) if record_type in self.record_types else ([], {})
            columns, rows = loaded[record_type]
            cells = rows.get(key["recordName"])
            why = self.problem(record_type, key["recordName"])
            if why is not None:
                found.append({"recordName": key["recordName"], "recordType": record_type, "problem": {"code": "invalidRow", "message": why}})
            elif cells is not None:
                found.append(self.record(key["recordType"], key["recordName"], columns, cells))
        return {"records": found}

    def identity(self):
        # The gateway's marker lives in the folder, so a copy or a restore of the folder carries it.
        try:
            with open(os.path.join(self.directory, ".gateway-store.json")) as handle:
                return json.load(handle)
        except (FileNotFoundError, ValueError):
            return {}

    def set_identity(self, store, epoch):
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, ".gateway-store.json")
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".gateway-store.")
        with os.fdopen(handle, "w") as out:
            json.dump({"store": store, "epoch": epoch}, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        return {}

    def write(self, saves, deletes, edit=False, tables=(), expected=None):
        stored = []
        expected = expected or {}
        touched = {}  # record type -> (saves in the row form, tables, names to delete)
        for record in saves:
            touched.setdefault(record["recordType"], ([], [], []))[0].append(record)
        for table in tables:
            touched.setdefault(table["recordType"], ([], [], []))[1].append(table)
        for key in deletes:
            touched.setdefault(key["recordType"], ([], [], []))[2].append(key["recordName"])
        for record_type in touched:
            if record_type not in self.record_types:
                raise PluginFailure("unknownRecordType", "this folder has no record type " + record_type)
        for record_type, (type_saves, type_tables, type_deletes) in touched.items():
            # Trust survives this write only if nothing else changed the file since it was trusted.
            keeps_trust = not edit and record_type in self.trusted and self.trusted[record_type] == self.stamp(record_type)
            self.trusted.pop(record_type, None)
            old_columns, rows = self.load(record_type)
            # A rewrite would drop what cannot be read (a short row is padded, a twin row goes):
            # nothing is written to the file until it is fixed.
            bad, whole = self.problems.get(record_type, ({}, None))
            if whole is not None:
                raise PluginFailure("invalidFile", whole + "; nothing is written to it until then")
            if bad:
                first = sorted(bad.values())[0]
                raise PluginFailure("invalidRows", "%s.csv has %d row(s) that cannot be read (%s); nothing is written to it until then" % (record_type, len(bad), first))
            if expected:
                # A row whose version is not the one the gateway read (None: no row then) was
                # edited by another program meanwhile: left as it is, answered as held back.
                current = self.versions_of(record_type)
                names = [record["recordName"] for record in type_saves] + [row[0] for table in type_tables for row in table["rows"]] + list(type_deletes)
                moved = {name for name in names if name in expected and current.get(name) != expected[name]}
                if moved:
                    type_saves = [record for record in type_saves if record["recordName"] not in moved]
                    type_tables = [dict(table, rows=[row for row in table["rows"] if row[0] not in moved]) for table in type_tables]
                    type_deletes = [name for name in type_deletes if name not in moved]
                    stored += [{"recordName": name, "recordType": record_type, "heldBack": True} for name in sorted(moved)]
                    if not type_saves and not type_deletes and not any(table["rows"] for table in type_tables):
                        continue
            columns = list(old_columns)
            known = {name for name, _ in columns}
            for record in type_saves:
                fields = record.get("fields", {})
                if known.issuperset(fields):
                    continue
                for field, value in sorted(fields.items()):
                    if field not in known:
                        columns.append((field, column_kind(value)))
                        known.add(field)
            for table in type_tables:
                for field, declared in zip(table["fields"], table["types"]):
                    if field not in known:
                        columns.append((field, KINDS.get(declared, "json")))
                        known.add(field)
            written = {}
            for record in type_saves:
                fields = record.get("fields", {})
                written[record["recordName"]] = [encode_cell(kind, fields.get(column)) for column, kind in columns]
            for table in type_tables:
                # Each of the table's fields goes to its column, through an encoder chosen once.
                position = {name: index for index, (name, _) in enumerate(columns)}
                placed = [(position[field], cell_encoder(dict(columns)[field], declared)) for field, declared in zip(table["fields"], table["types"])]
                width = len(columns)
                for row in table["rows"]:
                    cells = [""] * width
                    for (index, encode), value in zip(placed, row[1:]):
                        if value is not None:
                            cells[index] = encode(value)
                    written[row[0]] = cells
            only_new = not type_deletes and not any(name in rows for name in written)
            versions = {name: version(columns, cells) for name, cells in written.items()}
            try:
                if only_new and columns == old_columns and os.path.exists(self.path(record_type)):
                    rows.update(written)
                    self.append(record_type, columns, rows, list(written))
                else:
                    if len(columns) > len(old_columns):
                        padding = [""] * (len(columns) - len(old_columns))
                        for name in rows:
                            rows[name] = rows[name] + padding
                    rows.update(written)
                    for name in type_deletes:
                        rows.pop(name, None)
                    self.rewrite(record_type, columns, rows)
            except BaseException:
                self.cache.pop(record_type, None)  # the file is what counts: read it again
                self.versions.pop(record_type, None)
                raise
            if keeps_trust:
                self.trusted[record_type] = self.cache[record_type][0]
            cached = self.versions.get(record_type)
            if cached is not None and cached[0] is rows:
                cached[1].update(versions)
                for name in type_deletes:
                    cached[1].pop(name, None)
            stored += [{"recordName": name, "recordType": record_type, "version": v} for name, v in versions.items()]
        return {"records": stored}

    def append(self, record_type, columns, rows, names):
        path = self.path(record_type)
        with open(path, "a", newline="", encoding="utf-8") as handle:
            # A file saved without its last line's newline (as many editors do) would join that
            # line and the first appended row into one.
            if handle.tell() > 0:
                with open(path, "rb") as tail:
                    tail.seek(-1, os.SEEK_END)
                    if tail.read(1) not in (b"\n", b"\r"):
                        handle.write("\n")
            writer = csv.writer(handle, lineterminator="\n")
            for name in names:
                writer.writerow([name] + rows[name])
            handle.flush()
            os.fsync(handle.fileno())
        self.remember(record_type, columns, rows)

    def rewrite(self, record_type, columns, rows):
        path = self.path(record_type)
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, prefix="." + record_type, suffix=".tmp")
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(descriptor, 0o666 & ~umask)
        with os.fdopen(descriptor, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["recordName"] + [name if kind == "string" else name + ":" + kind for name, kind in columns])
            for name, cells in rows.items():
                writer.writerow([name] + cells)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        self.remember(record_type, columns, rows)

    def remember(self, record_type, columns, rows):
        self.cache[record_type] = (self.stamp(record_type), columns, rows)


class PluginFailure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def parse_column(text):
    name, _, kind = text.partition(":")
    return (name, kind or "string")


def version(columns, cells):
    """A hash of the row's content. Trailing empty cells are left out, so adding a column (which
    gives old rows an empty cell at the end) leaves their versions as they were."""
    end = len(cells)
    while end and cells[end - 1] == "":
        end -= 1
    header = tuple(columns[:end])
    names = HEADER_TEXTS.get(header)
    if names is None:
        names = HEADER_TEXTS[header] = "\x1d" + "\x1f".join(f"{name}:{kind}" for name, kind in header)
    return hashlib.blake2b(("\x1e".join(cells[:end]) + names).encode(), digest_size=12).hexdigest()


HEADER_TEXTS = {}  # columns -> their part of a version's hashed text, built once per set of columns
KINDS = {"STRING": "string", "INT64": "int64", "DOUBLE": "double", "TIMESTAMP": "timestamp", "BYTES": "bytes"}


def column_kind(field):
    kind = field.get("type")
    if kind is None:
        value = field.get("value")
        kind = "STRING" if isinstance(value, str) else "INT64" if isinstance(value, int) else "DOUBLE" if isinstance(value, float) else "JSON"
    return KINDS.get(kind, "json")


def encode_cell(kind, field):
    if field is None:
        return ""
    value = field.get("value")
    declared = field.get("type")
    if declared == "STRING" and kind == "string" and value.__class__ is str and plain_cell(value):
        return value
    if (KINDS.get(declared, "json") if declared is not None else column_kind(field)) != kind:
        kind = "json"
    if kind != "json":
        text = repr(float(value)) if kind == "double" else str(value)
        if plain_cell(text):
            return text
    return json.dumps(field, separators=(",", ":"), sort_keys=True)


def plain_cell(text):
    """Whether text can be its cell as it is: an empty cell is no value, and a cell that starts
    like a typed field is read as one, so an empty string or such a look-alike is written as a
    json cell instead."""
    return text != "" and not (text[0] == "{" and text.startswith(('{"type"', '{"value"')))


def cell_encoder(kind, declared):
    """How a table's value of type `declared` becomes a cell of a `kind` column: as encode_cell
    would encode the field `{"type": declared, "value": value}`."""
    if kind == "json" or KINDS.get(declared, "json") != kind:
        return lambda value: json.dumps({"type": declared, "value": value}, separators=(",", ":"), sort_keys=True)
    if kind == "double":
        return lambda value: repr(float(value))
    if kind == "string" or kind == "bytes":
        def encode_text(value):
            text = value if value.__class__ is str else str(value)
            return text if plain_cell(text) else json.dumps({"type": declared, "value": value}, separators=(",", ":"), sort_keys=True)
        return encode_text
    return str


def checked(reader):
    """The reader's rows; a row it cannot read raises csv.Error naming the line it ended on."""
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as failure:
            raise csv.Error("line %d: %s" % (reader.line_num, failure)) from None
        yield cells


def name_shape(name):
    """A record name with its digits as #: `Note.12` and `Note.7` have one shape."""
    return "".join("#" if character.isdigit() else character for character in name)


def cell_is_readable(kind, cell):
    """Whether a non-empty cell reads as a value of its column's kind (what decode_cell needs)."""
    try:
        decode_cell(kind, cell)
        return True
    except (ValueError, TypeError):
        return False


def decode_cell(kind, cell):
    if cell.startswith("{") and (kind == "json" or cell.startswith('{"type"') or cell.startswith('{"value"')):
        return json.loads(cell)
    if kind == "int64":
        return {"value": int(cell), "type": "INT64"}
    if kind == "double":
        return {"value": float(cell), "type": "DOUBLE"}
    if kind == "timestamp":
        return {"value": int(cell), "type": "TIMESTAMP"}
    if kind == "bytes":
        base64.b64decode(cell, validate=True)
        return {"value": cell, "type": "BYTES"}
    return {"value": cell, "type": "STRING"}


def main():
    folder = None
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        ident = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}
        try:
            if method == "hello":
                settings = params.get("settings") or {}
                directory = params.get("scratch") or settings.get("directory") or "."
                types = list(settings.get("record_types") or [])
                if params.get("scratch") and "Note" not in types:
                    types.append("Note")  # the conformance check's record type
                if not types:
                    raise PluginFailure("badSettings", "settings.record_types must list at least one record type")
                folder = Folder(directory, types)
                result = {
                    "protocol": PROTOCOL,
                    "plugin": "csv-folder 1.0",
                    "capabilities": {"cursor": True, "notifications": False, "identity": True, "tables": True, "conditionalWrites": True},
                    "recordTypes": [{"name": name, "fields": [c for c, _ in folder.load(name)[0]]} for name in types],
                }
                if params.get("scratch"):
                    result["scratch"] = True  # its data is in the scratch folder, not settings.directory
            elif method == "list":
                result = folder.listing(params.get("cursor"), params.get("continuation"))
            elif method == "read":
                result = folder.read(params.get("records") or [])
            elif method == "write":
                result = folder.write(
                    params.get("saves") or [], params.get("deletes") or [], bool(params.get("edit")), params.get("tables") or [], params.get("expected"))
            elif method == "identity":
                result = folder.identity()
            elif method == "setIdentity":
                result = folder.set_identity(params.get("store"), params.get("epoch"))
            else:
                raise PluginFailure("unknownMethod", "this plugin does not know " + str(method))
            answer = {"id": ident, "result": result}
        except PluginFailure as failure:
            answer = {"id": ident, "error": {"code": failure.code, "message": failure.message}}
        except OSError as failure:
            # An OSError names a file and the system's reason, never a value.
            answer = {"id": ident, "error": {"code": "storeFailed", "message": type(failure).__name__ + ": " + str(failure)}}
        except ValueError as failure:
            # A ValueError's text may quote the value it could not read: only its kind is told.
            answer = {"id": ident, "error": {"code": "storeFailed", "message": "a value could not be read or written (" + type(failure).__name__ + ")"}}
        out.write(json.dumps(answer, separators=(",", ":")) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
