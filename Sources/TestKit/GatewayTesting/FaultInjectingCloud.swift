import Foundation
import GatewayCore
import Synchronization

/// Wraps any `CloudDatabase` and makes it fail the way real clouds fail: lower operation limits,
/// throttling with `retryAfter`, outages, lost answers, expired tokens, missing or user-deleted
/// zones, and records changed concurrently on the server.
///
/// Random faults follow a seeded schedule: for a given seed and the same sequence of calls, the
/// same faults happen. Scripted faults (``script(_:on:)``) happen on the next matching call, in
/// order. Turn the cloud off with ``isEnabled`` for fault-free rounds.
public final class FaultInjectingCloud: CloudDatabase {
    /// The calls faults can be attached to.
    public enum Operation: String, Sendable, CaseIterable {
        /// The cloud call a fault is injected into.
        case zones, createZone, deleteZone, fetchChanges, modify, lookup, uploadAsset, downloadAsset, checkAccount
    }

    /// How likely each random fault is per call (0 = never, 1 = always).
    public struct Plan: Sendable {
        /// Modify requests with more operations than this fail with `limitExceeded`, as a server
        /// with a lower limit than it reports would.
        public var operationLimit: Int?
        /// `requestRateLimited` with ``retryAfter``, on any call.
        public var rateLimited: Double
        /// `serviceUnavailable` with ``retryAfter``, on any call.
        public var serviceUnavailable: Double
        /// `zoneBusy` with ``retryAfter``, on fetches and modifies.
        public var zoneBusy: Double
        /// `networkFailure` before the request reaches the cloud, on any call.
        public var networkFailure: Double
        /// `networkFailure` after the cloud applied a modify: the caller cannot know it succeeded.
        public var lostResponse: Double
        /// `changeTokenExpired` on fetches that carry a token.
        public var tokenExpired: Double
        /// `zoneNotFound` on fetches and modifies, while the zone in fact exists.
        public var zoneNotFound: Double
        /// Per conditional operation (replace, delete): another writer saves the record on the
        /// server first, so the operation fails with `serverRecordChanged` and the server record.
        public var serverRecordChanged: Double
        /// The `retryAfter` the transient faults carry.
        public var retryAfter: Duration

        /// A plan; each fault is off unless given a probability (0 to 1) per call or operation, and
        /// `operationLimit` lowers the cloud's operations per request.
        public init(
            operationLimit: Int? = nil, rateLimited: Double = 0, serviceUnavailable: Double = 0, zoneBusy: Double = 0,
            networkFailure: Double = 0, lostResponse: Double = 0, tokenExpired: Double = 0, zoneNotFound: Double = 0,
            serverRecordChanged: Double = 0, retryAfter: Duration = .milliseconds(5)
        ) {
            self.operationLimit = operationLimit
            self.rateLimited = rateLimited
            self.serviceUnavailable = serviceUnavailable
            self.zoneBusy = zoneBusy
            self.networkFailure = networkFailure
            self.lostResponse = lostResponse
            self.tokenExpired = tokenExpired
            self.zoneNotFound = zoneNotFound
            self.serverRecordChanged = serverRecordChanged
            self.retryAfter = retryAfter
        }

        /// No random faults.
        public static let none = Plan()

        /// Every kind of fault now and then, for convergence tests.
        public static func chaos(probability: Double = 0.05, operationLimit: Int? = 20) -> Plan {
            Plan(
                operationLimit: operationLimit, rateLimited: probability, serviceUnavailable: probability,
                zoneBusy: probability, networkFailure: probability, lostResponse: probability,
                tokenExpired: probability / 2, zoneNotFound: probability / 2, serverRecordChanged: probability)
        }
    }

    /// A fault to inject on the next matching call.
    public enum ScriptedFault: Sendable {
        /// No fault: the call runs normally. Queue it to aim a later fault at a later call.
        case passThrough
        /// The call throws this error without reaching the cloud.
        case error(CloudError)
        /// A modify is applied, then its answer is lost (`networkFailure`).
        case lostResponse
        /// The zone is deleted on the cloud, and the call throws `userDeletedZone`.
        case userDeletedZone
        /// Another writer applies these operations to the call's zone just before the call runs,
        /// so the call meets real concurrent changes (stale change tags, vanished records).
        case concurrentWrite([RecordOperation])
        /// A fetch of changes also returns, again, the records the previous fetch of the zone
        /// returned, as a feed that delivers a record twice (CloudKit's may).
        case redeliverPrevious
    }

    /// One fault that was injected, for assertions and replay checks.
    public struct InjectedFault: Sendable, Hashable, CustomStringConvertible {
        /// The call that failed.
        public var operation: Operation
        /// The error it failed with.
        public var code: CloudError.Code
        /// The record, for per-record faults.
        public var recordName: String?

        public var description: String { "\(operation.rawValue): \(code)\(recordName.map { " (\($0))" } ?? "")" }
    }

    private struct State {
        var random: SeededGenerator
        var enabled = true
        var scripted: [Operation: [ScriptedFault]] = [:]
        var log: [InjectedFault] = []
        /// The records each zone's last fetch of changes returned.
        var lastFetched: [ZoneID: [Record]] = [:]
    }

    /// The cloud being wrapped.
    public let base: any CloudDatabase
    /// The random fault probabilities.
    public let plan: Plan
    private let state: Mutex<State>

    /// Wraps `base`; random faults follow `plan` on a schedule seeded by `seed`.
    public init(wrapping base: any CloudDatabase, plan: Plan, seed: UInt64) {
        self.base = base
        self.plan = plan
        self.state = Mutex(State(random: SeededGenerator(seed: seed)))
    }

    /// The base cloud's limits: a real server does not announce that it will refuse a request.
    public var limits: CloudLimits { base.limits }

    /// Whether random faults are injected. Scripted faults always are.
    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    /// Every fault injected so far, in order.
    public var injectedFaults: [InjectedFault] { state.withLock { $0.log } }

    /// Queues `fault` for the next call of `operation`.
    public func script(_ fault: ScriptedFault, on operation: Operation) {
        state.withLock { $0.scripted[operation, default: []].append(fault) }
    }

    // MARK: CloudDatabase

    public func zones() async throws -> [ZoneID] {
        try await before(.zones, zone: nil)
        return try await base.zones()
    }

    public func createZone(_ zone: ZoneID) async throws {
        try await before(.createZone, zone: zone)
        try await base.createZone(zone)
    }

    public func deleteZone(_ zone: ZoneID) async throws {
        try await before(.deleteZone, zone: zone)
        try await base.deleteZone(zone)
    }

    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        let scripted = try await before(.fetchChanges, zone: zone)
        if token != nil, draw(plan.tokenExpired) {
            throw record(.fetchChanges, CloudError(.changeTokenExpired, "injected: the change token expired"))
        }
        var page = try await base.fetchChanges(in: zone, since: token, limit: limit)
        let previous = state.withLock { state in
            defer { state.lastFetched[zone] = page.modified }
            return state.lastFetched[zone] ?? []
        }
        if case .redeliverPrevious? = scripted {
            page.modified = previous + page.modified
        }
        return page
    }

    public func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws
        -> [RecordOperationResult]
    {
        let scripted = try await before(.modify, zone: zone)
        var lost = false
        if case .lostResponse? = scripted { lost = true }
        if let limit = plan.operationLimit, isEnabled, operations.count > limit {
            throw record(
                .modify,
                CloudError(.limitExceeded, "injected: the request has \(operations.count) operations, more than \(limit)"))
        }
        var conflicts: [Int: CloudError] = [:]
        for (index, operation) in operations.enumerated() where operation.isConditional && draw(plan.serverRecordChanged) {
            if let conflict = try await concurrentSave(of: operation.recordID, in: zone) {
                conflicts[index] = conflict
            }
        }
        var results: [RecordOperationResult]
        if conflicts.isEmpty {
            results = try await base.modify(operations, in: zone, atomic: atomic)
        } else if atomic {
            results = operations.enumerated().map { index, operation in
                .failed(
                    operation.recordID,
                    conflicts[index]
                        ?? CloudError(
                            .batchRequestFailed, "another record of the atomic request failed", recordID: operation.recordID))
            }
        } else {
            let remaining = operations.indices.filter { conflicts[$0] == nil }
            var applied = try await base.modify(remaining.map { operations[$0] }, in: zone, atomic: false).makeIterator()
            results = operations.indices.map { index in
                if let conflict = conflicts[index] { return .failed(operations[index].recordID, conflict) }
                return applied.next()!
            }
        }
        if lost || draw(plan.lostResponse) {
            throw record(.modify, CloudError(.networkFailure, "injected: the connection dropped before the answer arrived"))
        }
        return results
    }

    public func lookup(_ recordIDs: [RecordID]) async throws -> [Record?] {
        try await before(.lookup, zone: recordIDs.first?.zoneID)
        return try await base.lookup(recordIDs)
    }

    public func uploadAsset(_ data: Data) async throws -> AssetReference {
        try await before(.uploadAsset, zone: nil)
        return try await base.uploadAsset(data)
    }

    public func downloadAsset(_ reference: AssetReference) async throws -> Data {
        try await before(.downloadAsset, zone: nil)
        return try await base.downloadAsset(reference)
    }

    /// Closes the wrapped cloud.
    public func close() async {
        await base.close()
    }

    public func changeSignals(in zone: ZoneID) -> ChangeSignals {
        base.changeSignals(in: zone)
    }

    public func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken {
        try await base.currentChangeToken(in: zone)
    }

    public func checkAccount() async throws {
        try await before(.checkAccount, zone: nil)
        try await base.checkAccount()
    }

    // MARK: Fault plumbing

    /// Applies the scripted fault or the whole-request random faults for one call. Returns the
    /// scripted fault whose effect comes after the call (a lost response, a redelivery).
    @discardableResult
    private func before(_ operation: Operation, zone: ZoneID?) async throws -> ScriptedFault? {
        let scripted = state.withLock { state -> ScriptedFault? in
            guard var queue = state.scripted[operation], !queue.isEmpty else { return nil }
            let fault = queue.removeFirst()
            state.scripted[operation] = queue
            return fault
        }
        switch scripted {
        case .error(let error):
            throw record(operation, error)
        case .lostResponse, .redeliverPrevious:
            return scripted
        case .userDeletedZone:
            if let zone { try? await base.deleteZone(zone) }
            throw record(operation, CloudError(.userDeletedZone, "injected: the user deleted zone \(zone?.zoneName ?? "?")"))
        case .passThrough:
            return nil
        case .concurrentWrite(let operations):
            if let zone { _ = try await base.modify(operations, in: zone, atomic: false) }
        case nil:
            break
        }
        // Random faults leave the account check alone, so seeded runs draw the same faults as
        // before the check existed; script a fault to aim one at it.
        guard operation != .checkAccount else { return nil }
        let retryAfter = plan.retryAfter
        if draw(plan.rateLimited) {
            throw record(operation, CloudError(.requestRateLimited, "injected: too many requests", retryAfter: retryAfter))
        }
        if draw(plan.serviceUnavailable) {
            throw record(operation, CloudError(.serviceUnavailable, "injected: service unavailable", retryAfter: retryAfter))
        }
        if draw(plan.networkFailure) {
            throw record(operation, CloudError(.networkFailure, "injected: the connection failed"))
        }
        if operation == .fetchChanges || operation == .modify {
            if draw(plan.zoneBusy) {
                throw record(operation, CloudError(.zoneBusy, "injected: the zone is busy", retryAfter: retryAfter))
            }
            if draw(plan.zoneNotFound) {
                throw record(operation, CloudError(.zoneNotFound, "injected: zone \(zone?.zoneName ?? "?") was not found"))
            }
        }
        return nil
    }

    /// Saves the server's own record again, as a concurrent writer would, and returns the conflict
    /// the operation then meets; `nil` when the record does not exist on the server.
    private func concurrentSave(of id: RecordID, in zone: ZoneID) async throws -> CloudError? {
        guard let current = try await base.lookup([id])[0] else { return nil }
        guard case .saved(let server) = try await base.modify([.forceReplace(current)], in: zone, atomic: true)[0] else {
            return nil
        }
        state.withLock { $0.log.append(InjectedFault(operation: .modify, code: .serverRecordChanged, recordName: id.recordName)) }
        return CloudError(
            .serverRecordChanged, "injected: record \(id) was changed on the server by another writer", recordID: id,
            serverRecord: server)
    }

    private func draw(_ probability: Double) -> Bool {
        state.withLock { state in state.enabled && state.random.chance(probability) }
    }

    private func record(_ operation: Operation, _ error: CloudError) -> CloudError {
        state.withLock { $0.log.append(InjectedFault(operation: operation, code: error.code, recordName: nil)) }
        return error
    }
}

extension RecordOperation {
    /// Whether the operation depends on the server's change tag.
    var isConditional: Bool {
        switch self {
        case .replace, .update, .delete: true
        case .create, .forceReplace, .forceUpdate, .forceDelete: false
        }
    }
}
