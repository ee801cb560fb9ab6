import AdapterKit
import CloudKitWeb
import Foundation
import GatewayCore
import Logging

/// A resolver process: `merge_policy: custom` whose `merge_resolver` names an entry of the
/// config's `resolvers:`. Any executable speaking the plugin protocol's framing (JSON lines on
/// stdin/stdout, `hello` first) with the `resolve` method (`docs/writing-adapters.md`).
///
/// It is started on the first conflict it is asked about and kept running; conflicts go in
/// batches of at most `max_conflicts_per_message`. A process that crashes, times out or breaks the
/// protocol fails the whole batch (each of its records is left as it was, to be asked about again) and
/// is started again for the next one; an answer that does not fit its conflict fails that record
/// alone.
public final class PluginConflictResolver: BatchConflictResolver {
    private let name: String
    private let helper: PluginHelperProcess

    /// A resolver named `name` (as `merge_resolver` names it), run as `configuration` says. The
    /// configuration's adapter name is used in messages.
    public init(name: String, configuration: PluginConfiguration, logger: Logger) {
        self.name = name
        self.helper = PluginHelperProcess(role: "resolver", name: name, configuration: configuration, logger: logger)
    }

    public func resolve(_ conflicts: [ConflictContext]) async -> [Result<ConflictResolution, SyncError>] {
        var answers: [Result<ConflictResolution, SyncError>] = []
        answers.reserveCapacity(conflicts.count)
        let size = max(1, helper.configuration.maxRecordsPerMessage)
        for start in stride(from: 0, to: conflicts.count, by: size) {
            let batch = Array(conflicts[start..<min(start + size, conflicts.count)])
            do {
                answers += try await resolveAlone(batch)
            } catch {
                let failure = SyncError(.resolverFailed, "resolver '\(name)' failed: \(error)", underlying: error)
                answers += Array(repeating: .failure(failure), count: batch.count)
            }
        }
        return answers
    }

    /// Starts the process and greets it, leaving it running (``close()`` stops it).
    /// - Throws: why it cannot start or answer the handshake.
    public func checkStarts() async throws {
        try await helper.checkStarts()
    }

    /// Stops the process, if it runs.
    public func close() async {
        await helper.close()
    }

    private func resolveAlone(_ conflicts: [ConflictContext]) async throws -> [Result<ConflictResolution, SyncError>] {
        var encoded: [JSONValue] = []
        encoded.reserveCapacity(conflicts.count)
        for conflict in conflicts { encoded.append(try Self.encode(conflict)) }
        let answer = try await helper.request("resolve", params: .object(["conflicts": .array(encoded)]))
        guard let resolutions = answer["resolutions"]?.arrayValue else {
            throw helper.malformed("answered resolve without a resolutions list")
        }
        guard resolutions.count == conflicts.count else {
            throw helper.malformed("answered \(resolutions.count) resolutions to \(conflicts.count) conflicts")
        }
        return zip(conflicts, resolutions).map { conflict, resolution in
            Result { () throws(SyncError) in try decode(resolution, of: conflict) }
        }
    }

    /// A conflict as the `resolve` request carries it: both versions (`null` for a deletion) and
    /// which fields each side changed since the last synced version (the ancestor is known by
    /// fingerprints only, so its values are not sent).
    static func encode(_ conflict: ConflictContext) throws -> JSONValue {
        let zone = conflict.recordID.zoneID
        let names = conflict.fieldNames.sorted()
        return .object([
            "recordName": .string(conflict.recordID.recordName),
            "recordType": .string(conflict.server?.recordType ?? conflict.local?.recordType ?? ""),
            "hasAncestor": .bool(conflict.hasAncestor),
            "local": try conflict.local.map { try PluginMessages.encode($0, zone: zone) } ?? .null,
            "server": try conflict.server.map { try PluginMessages.encode($0, zone: zone) } ?? .null,
            "changedLocally": .array(names.filter { conflict.local != nil && conflict.changedLocally($0) }.map(JSONValue.string)),
            "changedOnServer": .array(names.filter { conflict.server != nil && conflict.changedOnServer($0) }.map(JSONValue.string)),
        ])
    }

    /// One answer of a `resolve` reply: `{"recordName", "take": "server" | "local"}`,
    /// `{"recordName", "fields": {…}}` or `{"recordName", "error": "…"}`.
    func decode(_ answer: JSONValue, of conflict: ConflictContext) throws(SyncError) -> ConflictResolution {
        let record = conflict.recordID.recordName
        func failure(_ detail: String) -> SyncError { SyncError(.resolverFailed, "resolver '\(name)' answered record \(record) \(detail)") }
        guard let named = answer["recordName"]?.stringValue else { throw failure("without a recordName") }
        guard named == record else { throw failure("with another record's name (answers come in the order of the conflicts)") }
        if let error = answer["error"]?.stringValue { throw failure("with an error: \(error)") }
        if let take = answer["take"] {
            guard answer["fields"] == nil else { throw failure("with both take and fields") }
            switch take.stringValue {
            case "server": return .server
            case "local": return .local
            default: throw failure("with take other than \"server\" or \"local\"")
            }
        }
        guard case .object(let encoded)? = answer["fields"] else { throw failure("with neither take, fields nor error") }
        // A field left out is more likely a slip than a clear: a clear is said with `null`.
        var held = Set<String>()
        conflict.local?.forEachField { name, _ in held.insert(name) }
        conflict.server?.forEachField { name, _ in held.insert(name) }
        if let missing = held.subtracting(encoded.keys).sorted().first {
            throw failure("without field '\(missing)', which the record holds (send null to clear it)")
        }
        var fields: [String: FieldValue] = [:]
        for (field, value) in encoded where value != .null && value["value"] != .null {
            do {
                fields[field] = try CloudKitFieldCoding.decode(value, in: conflict.recordID.zoneID, name: field)
            } catch {
                throw failure("with field '\(field)' it cannot read: \(error.message)")
            }
        }
        return .fields(fields)
    }
}
