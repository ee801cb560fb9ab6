import AdapterKit
import CloudKitWeb
import Foundation
import GatewayCore
import Logging

/// A processor process: a `processors` entry of `kind: process` naming an entry of the config's
/// `processors:`. Any executable speaking the plugin protocol's framing (JSON lines on
/// stdin/stdout, `hello` first) with the `process` method (`docs/writing-adapters.md`).
///
/// It is started on the first batch and kept running; records go in messages of at most
/// `max_records_per_message`, one record type at a time, with the direction (`outgoing`: store to
/// zone, `incoming`: zone to store). Every answer is checked before it is used: one record per
/// record sent, in order, under the same name and type, with fields the gateway can read. A
/// process that crashes, times out or answers something else fails the batch with
/// ``RecordProcessorError`` (the adapter's upload or the page's apply stops, nothing is written,
/// and the next sync asks again) and is started again for the next one.
public final class PluginRecordProcessor: RecordProcessor, CustomStringConvertible {
    private let name: String
    private let helper: PluginHelperProcess

    /// A processor named `name` (as `processor:` names it), run as `configuration` says.
    public init(name: String, configuration: PluginConfiguration, logger: Logger) {
        self.name = name
        self.helper = PluginHelperProcess(role: "processor", name: name, configuration: configuration, logger: logger)
    }

    /// `processor 'NAME'`, as messages name it.
    public var description: String { "processor '\(name)'" }

    public func outgoing(_ records: [Record]) async throws -> [Record] {
        try await process(records, direction: "outgoing")
    }

    public func incoming(_ records: [Record]) async throws -> [Record] {
        try await process(records, direction: "incoming")
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

    private func process(_ records: [Record], direction: String) async throws -> [Record] {
        guard !records.isEmpty else { return [] }
        var processed: [Record] = []
        processed.reserveCapacity(records.count)
        let size = max(1, helper.configuration.maxRecordsPerMessage)
        for start in stride(from: 0, to: records.count, by: size) {
            let batch = Array(records[start..<min(start + size, records.count)])
            do {
                processed += try await processAlone(batch, direction: direction)
            } catch let error as RecordProcessorError {
                throw error
            } catch {
                throw RecordProcessorError(
                    "processor '\(name)' failed on \(direction) records of type \(batch[0].recordType) (first \(batch[0].id.recordName)): \(error)",
                    underlying: error)
            }
        }
        return processed
    }

    private func processAlone(_ records: [Record], direction: String) async throws -> [Record] {
        var encoded: [JSONValue] = []
        encoded.reserveCapacity(records.count)
        for record in records { encoded.append(try Self.encode(record)) }
        let answer = try await helper.request("process", params: .object(["direction": .string(direction), "records": .array(encoded)]))
        guard let answered = answer["records"]?.arrayValue else {
            throw helper.malformed("answered process without a records list")
        }
        guard answered.count == records.count else {
            throw helper.malformed("answered \(answered.count) record(s) to \(records.count)")
        }
        var processed: [Record] = []
        processed.reserveCapacity(records.count)
        for (record, answer) in zip(records, answered) { processed.append(try decode(answer, of: record, direction: direction)) }
        return processed
    }

    /// A record as the `process` request carries it: every field of its layout, `null` for a
    /// field the record holds empty (a field left out is one the record does not hold).
    static func encode(_ record: Record) throws -> JSONValue {
        var fields: [String: JSONValue] = [:]
        for (position, name) in record.layout.fieldNames.enumerated() {
            guard let value = record[position: position] else {
                fields[name] = .null
                continue
            }
            fields[name] = try CloudKitFieldCoding.encode(value, in: record.id.zoneID)
        }
        return .object(["recordName": .string(record.id.recordName), "recordType": .string(record.recordType), "fields": .object(fields)])
    }

    /// One record of a `process` answer: `{"recordName", "recordType", "fields": {…}}` (a field
    /// left out is not held; `null` is held empty) or `{"recordName", "error": "…"}`.
    func decode(_ answer: JSONValue, of record: Record, direction: String) throws -> Record {
        let recordName = record.id.recordName
        func failure(_ detail: String) -> RecordProcessorError {
            RecordProcessorError("processor '\(name)' answered \(direction) record \(recordName) \(detail)")
        }
        guard let named = answer["recordName"]?.stringValue else { throw failure("without a recordName") }
        guard named == recordName else { throw failure("with another record's name (answers come in the order of the records)") }
        if let error = answer["error"]?.stringValue { throw failure("with an error: \(error)") }
        if let type = answer["recordType"], type.stringValue != record.recordType {
            throw failure("with another record type (a processor keeps each record's type)")
        }
        guard case .object(let encoded)? = answer["fields"] else { throw failure("without a fields object") }
        var fields: [String: FieldValue?] = [:]
        for (field, value) in encoded {
            guard !field.isEmpty, field.utf8.count <= 255 else { throw failure("with an empty or over-long field name") }
            if value == .null || value["value"] == .null {
                fields[field] = .some(nil)
                continue
            }
            do {
                fields[field] = try CloudKitFieldCoding.decode(value, in: record.id.zoneID, name: field)
            } catch {
                throw failure("with field '\(field)' it cannot read: \(error.message)")
            }
        }
        return record.withFields(fields)
    }
}
