import AdapterKit
import CloudKitWeb
import GatewayCore
import Logging
import Synchronization

/// A ``KitStore`` served by a plugin process over the JSON-lines protocol (see
/// `docs/writing-adapters.md`). The process is started on first use and again after it fails;
/// the kit's state lives in the gateway, so a plugin keeps no sync bookkeeping.
public final class PluginStore: KitStore {
    public let configuration: PluginConfiguration
    private let logger: Logger
    private let session = Mutex<Session?>(nil)
    private let notificationBase = Mutex(0)
    /// One request at a time: the protocol has one outstanding request per process.
    private let gate = KitGate()

    /// What a plugin said of itself in the handshake.
    public struct Handshake: Sendable, Equatable {
        /// The plugin's own name and version, for logs.
        public var plugin: String
        public var recordTypes: [RecordTypeDeclaration]
        /// Whether `list` takes a cursor and answers with changes only.
        public var listsChangesSinceCursor: Bool
        /// Whether the plugin sends `changed` notifications.
        public var notifiesChanges: Bool
        /// Whether the plugin keeps the kit's identity marker (`identity` and `setIdentity`).
        public var keepsIdentity: Bool = false
        /// Whether `write` may carry saves as tables (a record type's fields and types once, then
        /// a row of values per record) besides the row form.
        public var takesTables: Bool = false
        /// Whether `write` carries `expected`, the version the gateway last saw of each record,
        /// and the plugin leaves a record whose version moved as it is (`"heldBack": true`).
        public var writesConditionally: Bool = false

        /// The fields each declared record type names (empty: the plugin declared none, so a
        /// field its records leave out is unknown rather than null).
        var declaredFields: [String: [String]] {
            Dictionary(recordTypes.map { ($0.name, $0.fields) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// A record type a plugin serves, with the fields it knows of.
    public struct RecordTypeDeclaration: Sendable, Equatable {
        public var name: String
        public var fields: [String]
    }

    private struct Session: Sendable {
        var process: PluginProcess
        var handshake: Handshake
    }

    public init(configuration: PluginConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The running plugin's process id, `nil` when none runs.
    public var processID: Int32? { session.withLock { $0?.process.pid } }

    /// Starts the plugin if it is not running and returns its handshake.
    public func handshake() async throws -> Handshake {
        try await connected().handshake
    }

    // MARK: KitStore

    public func list(since cursor: String?) async throws -> KitListing {
        let handshake = try await connected().handshake
        let types = handshake.declaredFields
        let sentCursor = handshake.listsChangesSinceCursor ? cursor : nil
        var listing = KitListing(entries: [], isComplete: sentCursor == nil)
        // Names by bytes: "é" and "e\u{301}" are two records (see RecordName).
        var seen = Set<RecordName>()
        var continuation: JSONValue = .null
        var pages = 0
        repeat {
            let answer = try await call(
                "list", ["cursor": sentCursor.map(JSONValue.string) ?? .null, "continuation": continuation])
            guard let records = answer["records"]?.arrayValue else { throw malformed("answered list without a records array") }
            for json in records {
                switch try decode(json, types: types) {
                case .entry(let entry):
                    if seen.insert(entry.key.name).inserted {
                        listing.entries.append(entry)
                    } else {
                        listing.problems.append(
                            KitProblem(recordName: entry.key.recordName, code: "duplicateRecord", message: "the plugin listed record \(entry.key.recordName) twice"))
                    }
                case .problem(let problem):
                    listing.problems.append(problem)
                }
            }
            if let deleted = answer["deleted"], deleted != .null {
                guard let names = deleted.arrayValue?.compactMap(\.stringValue), names.count == deleted.arrayValue?.count else {
                    throw malformed("answered list with a deleted member that is not an array of record names")
                }
                listing.deleted += names
            }
            if sentCursor != nil, let complete = answer["complete"]?.boolValue { listing.isComplete = complete }
            listing.cursor = handshake.listsChangesSinceCursor ? answer["cursor"]?.stringValue : nil
            continuation = answer["continuation"] ?? .null
            pages += 1
            if pages > 1_000_000 { throw malformed("answered list with continuations that never end") }
        } while continuation != .null
        let problemNames = Set(listing.problems.map { $0.name })
        listing.entries.removeAll { problemNames.contains($0.key.name) }
        return listing
    }

    public func read(_ keys: [KitRecordKey]) async throws -> [KitEntry] {
        let types = try await connected().handshake.declaredFields
        var entries: [KitEntry] = []
        for chunk in chunks(keys) {
            var params = JSONWriter(capacity: chunk.count * 64 + 16)
            params.beginObject()
            params.key("records")
            params.beginArray()
            for key in chunk { PluginMessages.write(key, into: &params) }
            params.endArray()
            params.endObject()
            let answer = try await call("read", serializedParams: params.bytes)
            guard let records = answer["records"]?.arrayValue else { throw malformed("answered read without a records array") }
            let asked = Set(chunk.map { $0.name })
            for json in records {
                // A record it cannot offer is left out here; the next listing reports it.
                if case .entry(let entry) = try decode(json, types: types), asked.contains(entry.key.name) { entries.append(entry) }
            }
        }
        return entries
    }

    // MARK: Identity

    public func keepsIdentity() async throws -> Bool {
        try await connected().handshake.keepsIdentity
    }

    public func readIdentity() async throws -> KitStoreIdentity? {
        let answer = try await call("identity", [:])
        guard let store = answer["store"]?.stringValue else { return nil }
        guard let epoch = answer["epoch"]?.int64Value else { throw malformed("answered identity with a store but no integer epoch") }
        return KitStoreIdentity(store: store, epoch: epoch)
    }

    public func writeIdentity(_ identity: KitStoreIdentity) async throws {
        _ = try await call("setIdentity", ["store": .string(identity.store), "epoch": .integer(identity.epoch)])
    }

    public func write(saves: [Record], deletes: [KitRecordKey]) async throws -> [KitEntry] {
        try await write(saves: saves, deletes: deletes, asEdit: false)
    }

    public func write(saves: [Record], deletes: [KitRecordKey], expecting versions: [String: String?]) async throws -> [KitEntry] {
        try await write(saves: saves, deletes: deletes, asEdit: false, expecting: versions)
    }

    /// The same `write` message with `"edit": true`, which tells a plugin with cursors to list
    /// these records as changed.
    public func writeAsAnotherProgram(saves: [Record], deletes: [KitRecordKey]) async throws {
        _ = try await write(saves: saves, deletes: deletes, asEdit: true)
    }

    private func write(saves: [Record], deletes: [KitRecordKey], asEdit: Bool, expecting versions: [String: String?]? = nil) async throws -> [KitEntry] {
        let handshake = try await connected().handshake
        let types = handshake.declaredFields
        var stored: [KitEntry] = []
        for record in saves {
            guard let reason = Self.unsendableReason(record.id.recordName) else { continue }
            throw PluginError(.unsendableRecord, adapter: configuration.adapterName, plugin: configuration.displayName, "\(reason); it cannot be sent to a plugin")
        }
        guard !saves.isEmpty || !deletes.isEmpty else { return [] }
        // Every message is written out before the first is sent, so a record that cannot be sent
        // fails the write before the plugin sees any of it. Saves first, then deletes, at most
        // max_records_per_message in one message.
        let perMessage = max(1, configuration.maxRecordsPerMessage)
        let operations = saves.count + deletes.count
        var messages: [[UInt8]] = []
        for start in stride(from: 0, to: operations, by: perMessage) {
            let end = min(operations, start + perMessage)
            let savesInChunk = min(start, saves.count)..<min(end, saves.count)
            let deletesInChunk = max(start, saves.count) - saves.count..<max(end, saves.count) - saves.count
            do {
                messages.append(
                    try writeParams(
                        saves: saves[savesInChunk], deletes: deletes[deletesInChunk], asEdit: asEdit, inTables: handshake.takesTables,
                        expecting: handshake.writesConditionally ? versions : nil))
            } catch {
                throw PluginError(
                    .malformedMessage, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "record \(error.recordName) cannot be sent: \(error.underlying.message)", underlying: error.underlying)
            }
        }
        for params in messages {
            let answer = try await call("write", serializedParams: params)
            if let records = answer["records"], records != .null {
                guard let array = records.arrayValue else { throw malformed("answered write with a records member that is not an array") }
                for json in array {
                    if case .entry(let entry) = try decode(json, types: types) { stored.append(entry) }
                }
            }
        }
        return stored
    }

    /// The params of one `write` message, members in sorted order as a serialized object has
    /// them: `saves` in the row form, or in `tables` (those whose fields fit their table) when
    /// the plugin takes tables.
    /// With `expecting`, the message carries `expected`: for each record it saves or deletes whose
    /// version the gateway knows, that version, or null where the plugin held none.
    private func writeParams(
        saves: ArraySlice<Record>, deletes: ArraySlice<KitRecordKey>, asEdit: Bool, inTables: Bool, expecting versions: [String: String?]?
    ) throws(PluginMessages.UnsendableRecord) -> [UInt8] {
        let zone = configuration.zoneID
        var params = JSONWriter(capacity: saves.count * (inTables ? 128 : 384) + deletes.count * 64 + 64)
        params.beginObject()
        params.key("deletes")
        params.beginArray()
        for key in deletes { PluginMessages.write(key, into: &params) }
        params.endArray()
        if asEdit {
            params.key("edit")
            params.bool(true)
        }
        if let versions {
            params.key("expected")
            params.beginObject()
            for name in (saves.map(\.id.recordName) + deletes.map(\.recordName)).sorted() {
                guard let expected = versions[name] else { continue }
                params.key(name)
                if let version = expected { params.string(version) } else { params.null() }
            }
            params.endObject()
        }
        var tables: JSONWriter?
        var rowForm = Array(saves.indices)
        if inTables {
            var written = JSONWriter(capacity: saves.count * 128 + 64)
            rowForm = try PluginMessages.writeTables(saves, zone: zone, into: &written)
            tables = written
        }
        params.key("saves")
        params.beginArray()
        for index in rowForm {
            do {
                try PluginMessages.write(saves[index], zone: zone, into: &params)
            } catch {
                throw PluginMessages.UnsendableRecord(recordName: saves[index].id.recordName, underlying: error)
            }
        }
        params.endArray()
        if let tables {
            params.key("tables")
            params.value(tables)
        }
        params.endObject()
        return params.bytes
    }

    public func servedRecordTypes() async throws -> Set<String>? {
        Set(try await connected().handshake.recordTypes.map(\.name))
    }

    /// Names the protocol carries (see ``isSendable(_:)``); a downloaded record with another name
    /// is left out of this store.
    public func canHold(recordNamed name: String) -> Bool { Self.isSendable(name) }

    /// Whether the protocol carries this record name: 1–255 bytes, no control characters
    /// (plugins are promised none).
    static func isSendable(_ name: String) -> Bool {
        unsendableReason(name) == nil
    }

    /// Why a record name cannot travel to or from a plugin, naming the record (its first 64
    /// characters, control characters escaped); `nil` when it can.
    static func unsendableReason(_ name: String) -> String? {
        let control = name.unicodeScalars.firstIndex { $0.value < 32 || $0.value == 127 }
        guard name.isEmpty || name.utf8.count > 255 || control != nil else { return nil }
        var shown = ""
        for scalar in name.unicodeScalars.prefix(64) {
            shown += scalar.value < 32 || scalar.value == 127 ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }
        if name.unicodeScalars.count > 64 { shown += "…" }
        if name.isEmpty { return "a record whose name is empty" }
        if let control {
            let offset = name.unicodeScalars.distance(from: name.unicodeScalars.startIndex, to: control)
            return "record '\(shown)': its name holds a control character (at character \(offset + 1)), which a record name cannot"
        }
        return "record '\(shown)': its name is \(name.utf8.count) bytes long, over the 255 a record name may take"
    }

    public func notificationCount() async -> Int? {
        session.withLock { session in
            guard let session, session.handshake.notifiesChanges else { return nil }
            return notificationBase.withLock { $0 } + session.process.notifications
        }
    }

    public func close() async {
        let running = session.withLock { session in
            defer { session = nil }
            return session?.process
        }
        await running?.stop()
    }

    // MARK: Talking to the process

    private func connected() async throws -> Session {
        if let session = session.withLock({ $0 }) { return session }
        return try await gate.run { try await connectedAlone() }
    }

    private func connectedAlone() async throws -> Session {
        if let session = session.withLock({ $0 }) { return session }
        let process = try await PluginProcess.start(configuration, logger: logger)
        do {
            var params: [String: JSONValue] = [
                "protocol": .integer(PluginMessages.protocolVersion), "gateway": "sync-gateway",
                "adapter": .string(configuration.adapterName), "zone": .string(configuration.zoneID.zoneName),
                "settings": configuration.settings,
            ]
            if let scratch = configuration.scratchDirectory { params["scratch"] = .string(scratch) }
            // A zone shared by another user (an adapter made from a `database: shared` template).
            if configuration.zoneID.ownerName != ZoneID.defaultOwnerName { params["zoneOwner"] = .string(configuration.zoneID.ownerName) }
            let answer = try await process.request("hello", params: .object(params), timeout: configuration.startTimeout)
            let handshake = try parseHandshake(answer)
            let started = Session(process: process, handshake: handshake)
            session.withLock { $0 = started }
            logger.info(
                "plugin started", metadata: ["adapter": .string(configuration.adapterName), "plugin": .string(handshake.plugin), "pid": "\(process.pid)"])
            return started
        } catch {
            let described = await describe(error, process: process)
            await process.stop(grace: .milliseconds(200))
            throw described
        }
    }

    private func call(_ method: String, _ params: [String: JSONValue]) async throws -> JSONValue {
        var serialized = JSONWriter(capacity: 256)
        try serialized.value(.object(params))
        return try await call(method, serializedParams: serialized.bytes)
    }

    /// Calls `method` with its params given as their JSON text.
    private func call(_ method: String, serializedParams params: [UInt8]) async throws -> JSONValue {
        try await gate.run { try await callAlone(method, params) }
    }

    private func callAlone(_ method: String, _ params: [UInt8]) async throws -> JSONValue {
        var current = try await connectedAlone()
        if current.process.hasFailed || current.process.hasExited {
            // It went away between calls (killed, crashed while idle): nothing was sent, so a new
            // process takes this request.
            let failure = await describe(PluginError(.exited, adapter: configuration.adapterName, plugin: configuration.displayName, "exited while idle"), process: current.process)
            logger.warning("\(failure); starting it again", metadata: ["adapter": .string(configuration.adapterName)])
            discard(current)
            await current.process.stop(grace: .zero)
            current = try await connectedAlone()
        }
        do {
            return try await current.process.request(method, serializedParams: params, timeout: configuration.requestTimeout)
        } catch let error as PluginError where error.code == .pluginReportedError {
            throw error
        } catch {
            // Anything else leaves the process in an unknown state: a new one serves the next call.
            discard(current)
            let described = await describe(error, process: current.process)
            await current.process.stop(grace: .milliseconds(200))
            logger.warning("\(described)", metadata: ["adapter": .string(configuration.adapterName)])
            throw described
        }
    }

    /// Forgets a failed process, keeping the count of its notifications.
    private func discard(_ failed: Session) {
        let forgotten = session.withLock { session -> Bool in
            guard session?.process === failed.process else { return false }
            session = nil
            return true
        }
        if forgotten { notificationBase.withLock { $0 += failed.process.notifications } }
    }

    private func describe(_ error: any Error, process: PluginProcess) async -> any Error {
        guard let failure = error as? PluginError else { return error }
        return await process.failureWithStatus(failure)
    }

    private func parseHandshake(_ answer: JSONValue) throws -> Handshake {
        guard let version = answer["protocol"]?.int64Value else { throw malformed("answered hello without a protocol version") }
        guard version == PluginMessages.protocolVersion else {
            throw PluginError(
                .protocolMismatch, adapter: configuration.adapterName, plugin: configuration.displayName,
                "speaks protocol version \(version); this gateway speaks version \(PluginMessages.protocolVersion)")
        }
        guard let declared = answer["recordTypes"]?.arrayValue, !declared.isEmpty else {
            throw malformed("answered hello without recordTypes (a non-empty array of {name, fields})")
        }
        var types: [RecordTypeDeclaration] = []
        for entry in declared {
            guard let name = entry["name"]?.stringValue, !name.isEmpty, name.utf8.count <= 255 else {
                throw malformed("answered hello with a record type without a valid name")
            }
            types.append(RecordTypeDeclaration(name: name, fields: entry["fields"]?.arrayValue?.compactMap(\.stringValue) ?? []))
        }
        if let scratch = configuration.scratchDirectory {
            // `gateway check-adapter` writes thousands of made-up records: to a plugin that ignored
            // `scratch`, into its configured store. Nothing is sent before it says it will not.
            guard answer["scratch"]?.boolValue == true else {
                throw PluginError(
                    .scratchUnconfirmed, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "was started with a scratch folder (\(scratch)) but its hello answer does not confirm it keeps its data there; "
                        + "answer hello with \"scratch\": true once it uses params.scratch instead of its configured store "
                        + "(stopped before any request, so its configured store was not touched)")
            }
            guard types.contains(where: { $0.name == "Note" }) else {
                throw PluginError(
                    .scratchUnconfirmed, adapter: configuration.adapterName, plugin: configuration.displayName,
                    "was started with a scratch folder but does not serve record type Note; in scratch mode a plugin declares Note "
                        + "(with any fields) in hello's recordTypes, since the conformance cases write Note records")
            }
        }
        let capabilities = answer["capabilities"]
        return Handshake(
            plugin: answer["plugin"]?.stringValue ?? configuration.command, recordTypes: types,
            listsChangesSinceCursor: capabilities?["cursor"]?.boolValue ?? false,
            notifiesChanges: capabilities?["notifications"]?.boolValue ?? false,
            keepsIdentity: capabilities?["identity"]?.boolValue ?? false,
            takesTables: capabilities?["tables"]?.boolValue ?? false,
            writesConditionally: capabilities?["conditionalWrites"]?.boolValue ?? false)
    }

    private func decode(_ json: JSONValue, types: [String: [String]]) throws -> PluginMessages.Decoded {
        do {
            return try PluginMessages.decodeRecord(json, recordTypes: types, zone: configuration.zoneID)
        } catch {
            throw malformed("sent \(error.text)")
        }
    }

    private func malformed(_ detail: String) -> PluginError {
        PluginError(.malformedMessage, adapter: configuration.adapterName, plugin: configuration.displayName, detail)
    }

    private func chunks(_ keys: [KitRecordKey]) -> [ArraySlice<KitRecordKey>] {
        stride(from: 0, to: keys.count, by: max(1, configuration.maxRecordsPerMessage)).map {
            keys[$0..<min(keys.count, $0 + max(1, configuration.maxRecordsPerMessage))]
        }
    }
}
