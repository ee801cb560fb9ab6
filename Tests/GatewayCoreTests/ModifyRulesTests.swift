import Foundation
import GatewayCore
import Testing

@Suite("Modify rules shared by every cloud")
struct ModifyRulesTests {
    static let zone = ZoneID(zoneName: "Z")
    static let id = RecordID(recordName: "r", zoneID: zone)

    enum Stored: CaseIterable { case never, live, tombstone }
    enum Tag: CaseIterable { case current, stale, none }

    static func stored(_ stored: Stored) -> ModifyRules.StoredState? {
        switch stored {
        case .never: nil
        case .live: .init(changeTag: "current", isDeleted: false)
        case .tombstone: .init(changeTag: nil, isDeleted: true)
        }
    }

    static func tag(_ tag: Tag) -> String? {
        switch tag {
        case .current: "current"
        case .stale: "stale"
        case .none: nil
        }
    }

    static func operations(_ tag: Tag) -> [(String, RecordOperation)] {
        let record = Record(id: id, recordType: "T", changeTag: Self.tag(tag))
        return [
            ("create", .create(record)), ("replace", .replace(record)), ("forceReplace", .forceReplace(record)),
            ("delete", .delete(id, changeTag: Self.tag(tag))), ("forceDelete", .forceDelete(id)),
        ]
    }

    /// The expected decision for every operation, stored state and tag.
    static func expected(_ operation: String, _ stored: Stored, _ tag: Tag) -> String {
        switch (operation, stored) {
        case ("create", .live): "conflict"
        case ("create", _): "save"
        case ("forceReplace", _): "save"
        case ("forceDelete", .live): "delete"
        case ("forceDelete", _): "alreadyDeleted"
        case ("replace", .live), ("delete", .live):
            tag == .current ? (operation == "replace" ? "save" : "delete") : "conflict"
        case ("replace", _), ("delete", _): "unknownItem"
        default: "?"
        }
    }

    @Test("every operation against every stored state and change tag", arguments: Stored.allCases, Tag.allCases)
    func decisionTable(stored: Stored, tag: Tag) {
        for (name, operation) in Self.operations(tag) {
            let decision = ModifyRules.decide(operation, stored: Self.stored(stored))
            let actual: String =
                switch decision {
                case .save: "save"
                case .delete: "delete"
                case .alreadyDeleted: "alreadyDeleted"
                case .conflict: "conflict"
                case .fail(let code, _): code.name
                }
            #expect(actual == Self.expected(name, stored, tag), "\(name) on \(stored) with \(tag) tag")
        }
    }

    @Test("atomic failure spreads batchRequestFailed to the innocent operations only")
    func atomicSpread() {
        let ids = (0..<4).map { RecordID(recordName: "r\($0)", zoneID: Self.zone) }
        let culprit = [2: CloudError(.serverRecordChanged, "stale")]
        let atomic = ModifyRules.failedResults(ids: ids, failures: culprit, atomic: true)
        #expect(atomic.count == 4)
        #expect(atomic[2]?.code == .serverRecordChanged)
        #expect([0, 1, 3].allSatisfy { atomic[$0]?.code == .batchRequestFailed })
        #expect(ModifyRules.failedResults(ids: ids, failures: culprit, atomic: false).count == 1)
        #expect(ModifyRules.failedResults(ids: ids, failures: [:], atomic: true).isEmpty)
    }

    @Test("request validation: limits, duplicates, zones and names")
    func prepare() throws {
        let limits = CloudLimits(maxOperationsPerRequest: 3, maxRecordSize: 200, maxRequestSize: 400)
        func record(_ name: String, bytes: Int = 0, zone: ZoneID = ModifyRulesTests.zone) -> RecordOperation {
            .create(Record(id: RecordID(recordName: name, zoneID: zone), recordType: "T", fields: ["b": .bytes(Data(count: bytes))]))
        }
        #expect(throws: CloudError.self) { try ModifyRules.prepare([record("a"), record("b"), record("c"), record("d")], in: Self.zone, limits: limits) }
        #expect(throws: CloudError.self) { try ModifyRules.prepare([record("a"), .forceDelete(RecordID(recordName: "a", zoneID: Self.zone))], in: Self.zone, limits: limits) }
        #expect(throws: CloudError.self) { try ModifyRules.prepare([record("a", zone: ZoneID(zoneName: "Other"))], in: Self.zone, limits: limits) }
        #expect(throws: CloudError.self) { try ModifyRules.prepare([record("a", bytes: 190), record("b", bytes: 190), record("c", bytes: 190)], in: Self.zone, limits: limits) }
        let prepared = try ModifyRules.prepare([record("big", bytes: 300), record(""), record("ok", bytes: 10)], in: Self.zone, limits: limits)
        #expect(prepared[0].failure?.code == .limitExceeded)
        #expect(prepared[1].failure?.code == .invalidArguments)
        #expect(prepared[2].failure == nil && prepared[2].encodedFields != nil)
    }
}
