import Foundation
import GatewayCore

/// The behaviours every `CloudDatabase` implementation must show, as DESIGN §4 states them.
///
/// Run each case against a harness for the implementation:
///
/// ```swift
/// @Test(arguments: CloudConformanceSuite.cases)
/// func conformance(_ check: CloudConformanceCase) async throws {
///     try await check.run(with: MyCloudHarness())
/// }
/// ```
public enum CloudConformanceSuite {
    /// Every case of the suite.
    public static var cases: [CloudConformanceCase] {
        zoneCases + recordCases + feedCases + limitCases + assetCases
    }

    static let zone = ZoneID(zoneName: "ConformanceZone")

    static func id(_ name: String, _ zone: ZoneID = zone) -> RecordID {
        RecordID(recordName: name, zoneID: zone)
    }

    static func note(_ name: String, title: String, zone: ZoneID = zone, extra: [String: FieldValue] = [:]) -> Record {
        var fields: [String: FieldValue] = ["title": .string(title), "rank": .int64(Int64(title.count))]
        fields.merge(extra) { _, new in new }
        return Record(id: id(name, zone), recordType: "Note", fields: fields)
    }

    static func freshCloud(
        _ harness: any CloudConformanceHarness, limits: CloudLimits = .cloudKit
    ) async throws -> any CloudDatabase {
        let cloud = try await harness.makeCloud(limits: limits)
        try await cloud.createZone(zone)
        return cloud
    }

    /// Saves `records` with `create` and returns the saved versions, failing on any error.
    @discardableResult
    static func create(_ records: [Record], in cloud: any CloudDatabase, zone: ZoneID = zone) async throws -> [Record] {
        try await cloud.modify(records.map { .create($0) }, in: zone, atomic: false).map { try saved($0) }
    }

    static func saved(_ result: RecordOperationResult, fileID: String = #fileID, line: Int = #line) throws -> Record {
        guard case .saved(let record) = result else {
            throw ConformanceFailure("expected a saved record, got \(result)", fileID: fileID, line: line)
        }
        return record
    }

    static func failure(_ result: RecordOperationResult, fileID: String = #fileID, line: Int = #line) throws -> CloudError {
        guard case .failed(_, let error) = result else {
            throw ConformanceFailure("expected a failed record, got \(result)", fileID: fileID, line: line)
        }
        return error
    }

    /// Fetches the whole feed after `token`, page by page.
    static func fetchAll(
        _ cloud: any CloudDatabase, since token: ChangeToken?, zone: ZoneID = zone, limit: Int = 200
    ) async throws -> (modified: [Record], deleted: [RecordID], token: ChangeToken) {
        var modified: [Record] = []
        var deleted: [RecordID] = []
        var token = token
        while true {
            let page = try await cloud.fetchChanges(in: zone, since: token, limit: limit)
            modified += page.modified
            deleted += page.deleted
            token = page.token
            if !page.moreComing { return (modified, deleted, page.token) }
        }
    }

    // MARK: Zones

    static let zoneCases: [CloudConformanceCase] = [
        CloudConformanceCase("zone creation is idempotent and new zones are empty") { harness in
            let cloud = try await harness.makeCloud(limits: .cloudKit)
            let other = ZoneID(zoneName: "Other")
            try await cloud.createZone(zone)
            try await cloud.createZone(zone)
            try await cloud.createZone(other)
            let zones = try await cloud.zones()
            try expectEqual(zones.filter { $0 == zone }.count, 1, "listings of the zone created twice")
            try expect(zones.contains(other), "the second zone is listed")
            let page = try await cloud.fetchChanges(in: zone, since: nil, limit: 10)
            try expect(page.modified.isEmpty && page.deleted.isEmpty && !page.moreComing, "a new zone has no changes")
            let again = try await cloud.fetchChanges(in: zone, since: page.token, limit: 10)
            try expect(again.modified.isEmpty && !again.moreComing, "the token of an empty zone is usable")
        },
        CloudConformanceCase("operations on a missing zone fail with zoneNotFound") { harness in
            let cloud = try await harness.makeCloud(limits: .cloudKit)
            let missing = ZoneID(zoneName: "Missing")
            try await expectCloudError(.zoneNotFound, "fetch from a missing zone") {
                try await cloud.fetchChanges(in: missing, since: nil, limit: 10)
            }
            try await expectCloudError(.zoneNotFound, "modify in a missing zone") {
                try await cloud.modify([.create(note("a", title: "x", zone: missing))], in: missing, atomic: false)
            }
            try await expectCloudError(.zoneNotFound, "delete a missing zone") { try await cloud.deleteZone(missing) }
        },
        CloudConformanceCase("deleting a zone removes its records and expires its tokens") { harness in
            let cloud = try await freshCloud(harness)
            let first = try await create([note("a", title: "one")], in: cloud)[0]
            let token = try await fetchAll(cloud, since: nil).token
            try await cloud.deleteZone(zone)
            try expect(try await !cloud.zones().contains(zone), "a deleted zone is not listed")
            try await cloud.createZone(zone)
            // `zoneRecreated` where the cloud can tell, else `changeTokenExpired` (as CloudKit).
            do {
                _ = try await cloud.fetchChanges(in: zone, since: token, limit: 10)
                throw ConformanceFailure("a token from before the zone was recreated was accepted")
            } catch let error as CloudError where error.code == .zoneRecreated || error.code == .changeTokenExpired {}
            let all = try await fetchAll(cloud, since: nil)
            try expect(all.modified.isEmpty && all.deleted.isEmpty, "the recreated zone is empty")
            try expectEqual(try await cloud.lookup([first.id])[0], nil, "lookup in the recreated zone")
            let second = try await create([note("a", title: "two")], in: cloud)[0]
            try expect(second.changeTag != first.changeTag, "change tags are not reused after recreation")
            var stale = second
            stale.changeTag = first.changeTag
            let result = try await cloud.modify([.replace(stale)], in: zone, atomic: false)
            try expectEqual(try failure(result[0]).code, .serverRecordChanged, "replace with a tag of the old zone")
        },
    ]
}
