import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting

/// Saves records of six fields into a new embedded cloud file in requests of 200, then reads
/// them all back through the change feed; then saves them again into another file under UUID
/// names.
struct EmbeddedCloudScenario: Scenario {
    let name = "embedded-cloud"
    let summary = "embedded cloud: save N records of 6 fields in requests of 200, fetch them back through the change feed, save them again under UUID names"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let path = workDirectory.appendingPathComponent("cloud.sqlite").path
        let cloud = try EmbeddedCloud(path: path)
        let zone = ZoneID(zoneName: "Bench")
        try await cloud.createZone(zone)
        let batches = Self.records(count: records, zone: zone).chunked(into: 200)

        let (_, saveSeconds) = try await timed {
            for batch in batches {
                let results = try await cloud.modify(batch.map { .create($0) }, in: zone, atomic: true)
                if let error = results.lazy.compactMap(\.error).first { throw error }
            }
        }
        var measurements = [
            Measurement(
                name: "save \(records) records (requests of 200)", value: Double(records) / saveSeconds,
                unit: "records/s", goal: .atLeast(50_000))
        ]
        for pageSize in [200, 2_000] {
            let (fetched, fetchSeconds) = try await timed { () async throws -> Int in
                var token: ChangeToken?
                var count = 0
                while true {
                    let page = try await cloud.fetchChanges(in: zone, since: token, limit: pageSize)
                    count += page.modified.count
                    token = page.token
                    if !page.moreComing { return count }
                }
            }
            guard fetched == records else {
                throw BenchmarkError("fetched \(fetched) records, expected \(records)")
            }
            measurements.append(
                Measurement(
                    name: "fetch \(records) records (pages of \(pageSize))", value: Double(records) / fetchSeconds,
                    unit: "records/s", goal: .atLeast(150_000)))
        }
        let fileSize = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        measurements.append(Measurement(name: "cloud file size", value: Double(fileSize) / 1_000_000, unit: "MB"))

        // CloudKit clients usually name records with UUIDs: the same saves in random name order.
        let uuidCloud = try EmbeddedCloud(path: workDirectory.appendingPathComponent("cloud-uuid.sqlite").path)
        try await uuidCloud.createZone(zone)
        var generator = SeededGenerator(seed: 23)
        let uuidBatches = Self.records(count: records, zone: zone).map { record in
            let (high, low) = (generator.next(), generator.next())
            let name = String(format: "%08X-%04X-%04X-%04X-%012llX", UInt32(high >> 32), UInt16((high >> 16) & 0xFFFF), UInt16(high & 0xFFFF), UInt16(low >> 48), low & 0xFFFF_FFFF_FFFF)
            return Record(id: RecordID(recordName: name, zoneID: zone), recordType: record.recordType, fields: record.fields)
        }.chunked(into: 200)
        let (_, uuidSeconds) = try await timed {
            for batch in uuidBatches {
                let results = try await uuidCloud.modify(batch.map { .create($0) }, in: zone, atomic: true)
                if let error = results.lazy.compactMap(\.error).first { throw error }
            }
        }
        measurements.append(
            Measurement(name: "save \(records) UUID-named records", value: Double(records) / uuidSeconds, unit: "records/s"))
        return measurements
    }

    /// Deterministic records shaped like a notes table: two strings, an integer, a double, a
    /// timestamp and a boolean.
    static func records(count: Int, zone: ZoneID) -> [Record] {
        let body = String(repeating: "Lorem ipsum dolor sit amet. ", count: 4)
        return (0..<count).map { index -> Record in
            var fields: [String: FieldValue] = [:]
            fields["title"] = .string("Note number \(index)")
            fields["body"] = .string(body)
            fields["views"] = .int64(Int64(index * 7))
            fields["score"] = .double(Double(index) / 3)
            fields["createdAt"] = .timestamp(Timestamp(millisecondsSince1970: 1_700_000_000_000 + Int64(index)))
            fields["done"] = .int64(Int64(index % 2))
            return Record(id: RecordID(recordName: "note-\(index)", zoneID: zone), recordType: "Note", fields: fields)
        }
    }
}

extension Array {
    func chunked(into size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
