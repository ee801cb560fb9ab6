import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// Passes the harness's work through to the embedded cloud inside a ``FaultInjectingCloud``.
struct FaultInjectingHarness: CloudConformanceHarness {
    let base: EmbeddedCloudHarness

    func makeCloud(limits: CloudLimits) async throws -> any CloudDatabase {
        FaultInjectingCloud(wrapping: try await base.makeCloud(limits: limits), plan: .none, seed: 1)
    }

    func makeSecondClient(of cloud: any CloudDatabase) async throws -> any CloudDatabase {
        try await base.makeSecondClient(of: unwrapped(cloud))
    }

    func purgeAllTombstones(of cloud: any CloudDatabase) async throws {
        try await base.purgeAllTombstones(of: unwrapped(cloud))
    }

    func corruptAsset(_ reference: AssetReference, in cloud: any CloudDatabase) async throws {
        try await base.corruptAsset(reference, in: unwrapped(cloud))
    }

    func storedAssetCount(in cloud: any CloudDatabase) async throws -> Int {
        try await base.storedAssetCount(in: unwrapped(cloud))
    }

    private func unwrapped(_ cloud: any CloudDatabase) -> any CloudDatabase {
        (cloud as? FaultInjectingCloud)?.base ?? cloud
    }
}

@Suite("Fault-injecting cloud", .heavy)
struct FaultInjectingCloudTests {
    static let zone = ZoneID(zoneName: "Faults")

    static func note(_ name: String, _ title: String = "t") -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: ["title": .string(title)])
    }

    /// A fresh embedded cloud with the test zone, wrapped.
    static func makeCloud(
        _ directory: TemporaryDirectory, plan: FaultInjectingCloud.Plan, seed: UInt64 = 7
    ) async throws -> FaultInjectingCloud {
        let base = try EmbeddedCloud(path: directory.path("cloud-\(UUID().uuidString).sqlite"))
        try await base.createZone(zone)
        return FaultInjectingCloud(wrapping: base, plan: plan, seed: seed)
    }

    @Test("without faults the wrapper passes the whole cloud conformance suite", arguments: CloudConformanceSuite.cases)
    func transparent(_ check: CloudConformanceCase) async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        try await check.run(with: FaultInjectingHarness(base: EmbeddedCloudHarness(directory: directory)))
    }

    /// Runs a fixed sequence of calls and returns the faults injected.
    static func faultLog(seed: UInt64, directory: TemporaryDirectory) async throws -> [FaultInjectingCloud.InjectedFault] {
        let cloud = try await makeCloud(directory, plan: .chaos(probability: 0.2), seed: seed)
        for round in 0..<60 {
            _ = try? await cloud.modify([.forceReplace(note("r\(round % 7)", "\(round)"))], in: zone, atomic: false)
            _ = try? await cloud.fetchChanges(in: zone, since: nil, limit: 10)
        }
        return cloud.injectedFaults
    }

    @Test("the same seed replays the same faults; another seed gives others")
    func deterministic() async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        let first = try await Self.faultLog(seed: 11, directory: directory)
        let again = try await Self.faultLog(seed: 11, directory: directory)
        let other = try await Self.faultLog(seed: 12, directory: directory)
        #expect(first.count > 5)
        #expect(first == again)
        #expect(first != other)
    }

    @Test("requests over the hidden operation limit fail whole while the reported limit stays")
    func operationLimit() async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        let cloud = try await Self.makeCloud(directory, plan: .init(operationLimit: 3))
        #expect(cloud.limits.maxOperationsPerRequest == 200)
        let four = (0..<4).map { RecordOperation.create(Self.note("r\($0)")) }
        let error = await #expect(throws: CloudError.self) { try await cloud.modify(four, in: Self.zone, atomic: false) }
        #expect(error?.code == .limitExceeded)
        #expect(try await cloud.base.lookup([Self.note("r0").id]) == [nil])
        let three = try await cloud.modify(Array(four.prefix(3)), in: Self.zone, atomic: false)
        #expect(three.allSatisfy { $0.error == nil })
    }

    @Test("a lost response was applied although the caller saw a network failure")
    func lostResponse() async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        let cloud = try await Self.makeCloud(directory, plan: .none)
        cloud.script(.lostResponse, on: .modify)
        let error = await #expect(throws: CloudError.self) {
            try await cloud.modify([.create(Self.note("a"))], in: Self.zone, atomic: true)
        }
        #expect(error?.code == .networkFailure)
        #expect(try await cloud.lookup([Self.note("a").id])[0] != nil)
        #expect(cloud.injectedFaults.map(\.code) == [.networkFailure])
    }

    @Test("a concurrent server save makes conditional operations conflict, honouring atomicity")
    func concurrentConflicts() async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        let cloud = try await Self.makeCloud(directory, plan: .init(serverRecordChanged: 1))
        let saved = try await cloud.modify([.create(Self.note("a", "v1"))], in: Self.zone, atomic: true)
        guard case .saved(let v1) = saved[0] else { Issue.record("create failed: \(saved[0])"); return }
        var edit = v1
        edit["title"] = .string("v2")

        let atomic = try await cloud.modify([.replace(edit), .create(Self.note("b"))], in: Self.zone, atomic: true)
        let conflict = try #require(atomic[0].error)
        #expect(conflict.code == .serverRecordChanged)
        let server = try #require(conflict.serverRecord)
        #expect(server.changeTag != v1.changeTag, "the server record really changed")
        #expect(server.fields == v1.fields)
        #expect(atomic[1].error?.code == .batchRequestFailed)
        #expect(try await cloud.lookup([Self.note("b").id])[0] == nil)

        let partial = try await cloud.modify(
            [.replace(edit), .create(Self.note("c"))], in: Self.zone, atomic: false)
        #expect(partial[0].error?.code == .serverRecordChanged)
        #expect(partial[1].error == nil)
        #expect(try await cloud.lookup([Self.note("c").id])[0] != nil)
    }

    @Test("a scripted user deletion really deletes the zone")
    func userDeletedZone() async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        let cloud = try await Self.makeCloud(directory, plan: .none)
        cloud.script(.userDeletedZone, on: .fetchChanges)
        let error = await #expect(throws: CloudError.self) {
            try await cloud.fetchChanges(in: Self.zone, since: nil, limit: 10)
        }
        #expect(error?.code == .userDeletedZone)
        #expect(try await !cloud.zones().contains(Self.zone))
    }

    @Test("scripted errors come first and in order; disabling stops random faults")
    func scriptedAndDisabled() async throws {
        let directory = try TemporaryDirectory(prefix: "fault-cloud")
        defer { directory.remove() }
        let cloud = try await Self.makeCloud(directory, plan: .chaos(probability: 1, operationLimit: 1))
        cloud.isEnabled = false
        cloud.script(.error(CloudError(.quotaExceeded, "full")), on: .modify)
        cloud.script(.error(CloudError(.notAuthenticated, "signed out")), on: .modify)
        let operations = [RecordOperation.create(Self.note("a")), .create(Self.note("b"))]
        for expected in [CloudError.Code.quotaExceeded, .notAuthenticated] {
            let error = await #expect(throws: CloudError.self) {
                try await cloud.modify(operations, in: Self.zone, atomic: false)
            }
            #expect(error?.code == expected)
        }
        let results = try await cloud.modify(operations, in: Self.zone, atomic: false)
        #expect(results.allSatisfy { $0.error == nil })
        cloud.isEnabled = true
        await #expect(throws: CloudError.self) { try await cloud.fetchChanges(in: Self.zone, since: nil, limit: 1) }
    }
}
