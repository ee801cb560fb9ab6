import AdapterKit
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PostgresAdapter
import PostgresSupport
import PostgresTesting

/// Random histories against the gateway's semantics: two SQLite databases, a JSON folder, a
/// PostgreSQL table and a process plugin's CSV folder on one zone, each synced by the same gateway
/// (one device id) through a cloud that injects faults, while the application writes and deletes,
/// an operator takes backups and restores them (or replaces a store by a new one: a restore of the
/// empty store), a SQLite database and the PostgreSQL table gain columns the others lack, drop
/// them and rename them, the plugin dies in its writes, and the machine's clock steps back and forth.
/// Then quiet rounds without faults, and `HistoryOracle` counts anomalies by class.
struct HistoryRun {
    struct Result: Encodable {
        var seeds: Int
        var steps: Int
        var syncs: Int
        var failedSyncs: Int
        var restores: Int
        /// Columns added to, dropped from or renamed in a database.
        var schemaChanges: Int
        /// Steps of the machine's clock.
        var clockSteps: Int
        /// `gateway sync` processes killed with SIGKILL mid-sync.
        var gatewayCrashes: Int
        var conflictsReported: Int
        var anomalies: [String: Int]
        var failingSeeds: [UInt64]
        /// The failing seed with the fewest steps, and its history.
        var shortestFailure: Failure?
        var passed: Bool
    }

    struct Failure: Encodable {
        var seed: UInt64
        var steps: Int
        var history: [String]
        var anomalies: [String]
    }

    let seeds: Range<UInt64>
    let faultProbability: Double
    let directory: URL
    /// `examples/plugins/csv-folder/csv_folder.py`, the plugin of store `e`.
    let plugin: String
    /// The `gateway` executable, for syncs killed by SIGKILL.
    let gateway: String

    static let zone = ZoneID(zoneName: "History")
    static let records = (0..<5).map { "r\($0)" }

    /// - Parameter progress: called after each seed with its violations (class: what happened).
    func run(progress: (UInt64, [String]) -> Void = { _, _ in }) async throws -> Result {
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var result = Result(
            seeds: seeds.count, steps: 0, syncs: 0, failedSyncs: 0, restores: 0, schemaChanges: 0, clockSteps: 0, gatewayCrashes: 0, conflictsReported: 0,
            anomalies: Dictionary(uniqueKeysWithValues: HistoryOracle.Anomaly.allCases.map { ($0.rawValue, 0) }), failingSeeds: [],
            shortestFailure: nil, passed: true)
        let postgres = try await PostgresTestServer.freshDatabase("history")
        let wrapper = try HistoryPluginStore.writeWrapper(plugin: plugin, in: directory)
        for seed in seeds {
            let folder = directory.appendingPathComponent("seed-\(seed)")
            let outcome: History.Outcome
            do {
                outcome = try await History(
                    seed: seed, faultProbability: faultProbability, folder: folder, postgres: postgres, pluginWrapper: wrapper, gateway: gateway
                ).run()
            } catch {
                // The harness itself failed (a file, the machine): name the seed and the error.
                throw HarnessFailure("seed \(seed): \(error)")
            }
            try? FileManager.default.removeItem(at: folder)
            result.steps += outcome.steps
            result.syncs += outcome.syncs
            result.failedSyncs += outcome.failedSyncs
            result.restores += outcome.restores
            result.schemaChanges += outcome.schemaChanges
            result.clockSteps += outcome.clockSteps
            result.gatewayCrashes += outcome.crashes
            result.conflictsReported += outcome.conflicts
            for (anomaly, _) in outcome.anomalies { result.anomalies[anomaly.rawValue, default: 0] += 1 }
            if outcome.anomalies.contains(where: { $0.0.isViolation }) {
                result.passed = false
                result.failingSeeds.append(seed)
                if result.shortestFailure.map({ outcome.steps < $0.steps }) ?? true {
                    result.shortestFailure = Failure(
                        seed: seed, steps: outcome.steps, history: outcome.history,
                        anomalies: outcome.anomalies.map { "\($0.0.rawValue): \($0.1)" })
                }
            }
            progress(seed, outcome.anomalies.filter { $0.0.isViolation }.map { "\($0.0.rawValue): \($0.1)" })
        }
        return result
    }
}

/// One seed's history.
private struct History {
    struct Outcome {
        var steps = 0
        var syncs = 0
        var failedSyncs = 0
        var restores = 0
        var schemaChanges = 0
        var clockSteps = 0
        var crashes = 0
        var conflicts = 0
        var history: [String] = []
        var anomalies: [(HistoryOracle.Anomaly, String)] = []
    }

    let seed: UInt64
    let faultProbability: Double
    let folder: URL
    let postgres: PostgresEndpoint
    let pluginWrapper: String
    let gateway: String

    func run() async throws -> Outcome {
        let d = try await HistoryPostgresStore(name: "d", endpoint: postgres, schema: "history_\(seed)")
        do {
            let outcome = try await run(postgres: d)
            await d.remove()
            return outcome
        } catch {
            await d.remove()
            throw error
        }
    }

    private func run(postgres d: HistoryPostgresStore) async throws -> Outcome {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var random = SeededGenerator(seed: seed)
        let embedded = try EmbeddedCloud(path: folder.appendingPathComponent("cloud.sqlite").path)
        let cloud = FaultInjectingCloud(wrapping: embedded, plan: .chaos(probability: faultProbability, operationLimit: 4), seed: seed ^ 0xC10D_0000_0000_0000)
        /// Every value the cloud ever held (tagged with its field), read after each sync.
        var seenInCloud = Set<String>()
        /// Every record the cloud ever held.
        var heldInCloud = Set<String>()
        /// Record → the text values it holds, tagged with their fields.
        func values(of contents: [String: [String: FieldValue]]) -> [String: Set<String>] {
            contents.mapValues { fields in Set(fields.compactMap { if case .string(let text) = $1 { HistoryOracle.tag($0, text) } else { nil } }) }
        }
        func lookAtCloud() async throws -> [String: [String: FieldValue]] {
            guard try await embedded.zones().contains(HistoryRun.zone) else { return [:] }
            let contents = try await zoneContents(of: embedded, zone: HistoryRun.zone)
            heldInCloud.formUnion(contents.keys)
            for fields in contents.values {
                for (field, value) in fields { if case .string(let text) = value { seenInCloud.insert(HistoryOracle.tag(field, text)) } }
            }
            return contents
        }
        // Kit stores keep their state where a gateway process over the same folder finds it.
        let kitState = HistoryGatewayProcess.stateDirectory(in: folder).appendingPathComponent("adapters")
        try FileManager.default.createDirectory(at: kitState, withIntermediateDirectories: true)
        let a = try HistorySQLiteStore(name: "a", path: folder.appendingPathComponent("a.sqlite").path)
        let b = try HistorySQLiteStore(name: "b", path: folder.appendingPathComponent("b.sqlite").path)
        let c = try HistoryJSONStore(
            name: "c", folder: folder.appendingPathComponent("c"), statePath: kitState.appendingPathComponent("c.sqlite").path)
        let e = try HistoryPluginStore(
            name: "e", folder: folder.appendingPathComponent("e"), statePath: kitState.appendingPathComponent("e.sqlite").path,
            wrapper: pluginWrapper)
        let stores: [any HistoryStore] = [a, b, c, d, e]
        let schemaStores: [any HistorySchemaStore] = [a, d]
        /// How far the machine's clock is from the true time: it steps back and forth.
        let clockOffset = LockedValue<TimeInterval>(0)
        let clock: @Sendable () -> Date = { Date().addingTimeInterval(clockOffset.get()) }
        let prefers: MergePreference = seed.isMultiple(of: 2) ? .server : .client
        let options = AdapterSyncOptions(batchSize: 3, merge: MergeSettings(policy: .merge, prefers: prefers))
        let configuration = SyncConfiguration(deviceID: "gateway", retry: RetryPolicy(maxAttempts: 2))
        let environment = SyncEnvironment(sleep: { _ in }, now: clock, jitter: { 0 })
        let process = HistoryGatewayProcess(gateway: gateway, folder: folder, prefers: prefers == .server ? "server" : "client")

        var oracle = HistoryOracle()
        var outcome = Outcome()
        /// Backups per store: (path, step). The empty store at step 0 is always one (a store
        /// replaced by a new one).
        var backups: [String: [(path: String, step: Int)]] = [:]
        // The gateway watches the databases (its capture triggers are in the files) before the
        // history starts: a delete made in a copy it never opened is invisible to any gateway.
        for store in [a, b, d] as [any HistoryStore] {
            let adapter = try await store.adapter(zone: HistoryRun.zone)
            _ = try await adapter.pendingChangeCount()
            await close(adapter)
        }
        for store in stores {
            let path = folder.appendingPathComponent("\(store.name)-backup-0").path
            try await store.backup(to: path)
            backups[store.name] = [(path, 0)]
        }
        let conflicts = LockedValue<[String: [HistoryOracle.Conflict]]>([:])
        let stepNow = LockedValue(0)

        // HISTORY_TRACE=1 prints every sync and conflict of the run, to study one failing seed.
        let trace = ProcessInfo.processInfo.environment["HISTORY_TRACE"] != nil
        // The plugin's adapter lives across syncs, as under `gateway run` (its folder is restored
        // under a running plugin), until the gateway restarts (one in five of its syncs ends so).
        var runningPlugin: (any ModelAdapter)?
        var restarts = SeededGenerator(seed: seed ^ 0x5EED_0000_0000_0000)
        func sync(_ store: any HistoryStore, faults: Bool) async throws -> AdapterSyncReport {
            cloud.isEnabled = faults
            let storeName = store.name
            let adapter: any ModelAdapter
            if store === e, let running = runningPlugin {
                adapter = running
            } else {
                e.crashChance = faults ? 0.2 : 0
                e.crashSeed = seed &* 1000 &+ UInt64(stepNow.get())
                adapter = try await store.adapter(zone: HistoryRun.zone)
            }
            let synchronizer = Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(adapter, options: options)], configuration: configuration, environment: environment,
                observer: { event in
                    if case .conflict(_, let id, let policy, let resolution) = event {
                        let step = stepNow.get()
                        conflicts.withLock { $0[id.recordName, default: []].append(HistoryOracle.Conflict(step: step, store: storeName)) }
                        if trace { print("    \(step) \(storeName) conflict \(id.recordName) \(policy) \(resolution)") }
                    }
                })
            let report: AdapterSyncReport
            do {
                report = try await synchronizer.sync().adapters[0]
            } catch {
                if store === e { runningPlugin = nil }
                await close(adapter)
                throw error
            }
            if store === e && (!faults || Int.random(in: 0..<5, using: &restarts) > 0) {
                runningPlugin = adapter
            } else {
                if store === e { runningPlugin = nil }
                await close(adapter)
            }
            return report
        }

        let steps = 16 + Int(seed % 37)
        outcome.steps = steps
        var tracedState = ""
        for step in 1...steps {
            if trace {
                let state = e.traceState()
                if state != tracedState { print("    before \(step): e \(state)") }
                tracedState = state
            }
            stepNow.withLock { $0 = step }
            let store = stores.randomElement(using: &random)!
            let roll = Int.random(in: 0..<100, using: &random)
            let record = HistoryRun.records.randomElement(using: &random)!
            switch roll {
            case 0..<40:
                let field = store.fields.randomElement(using: &random)!
                let value = "\(store.name)-\(step)-\(field)"
                let held = try await store.contents()[record]
                try await store.write(record: record, field: field, value: value)
                oracle.write(
                    step: step, store: store.name, record: record, field: field, value: value, previous: held?[field], recordHeld: held != nil,
                    naming: store.namesEveryField ? Set(store.fields) : [])
                outcome.history.append("\(step): \(store.name) sets \(record).\(field) = \(value)")
            case 40..<46:
                guard let held = try await store.contents()[record] else { continue }
                try await store.delete(record: record)
                oracle.delete(
                    step: step, store: store.name, record: record, previous: held.map { HistoryOracle.tag($0.key, $0.value) },
                    storeFields: Set(store.fields))
                outcome.history.append("\(step): \(store.name) deletes \(record)")
            case 46..<76 where Int.random(in: 0..<8, using: &random) == 0:
                // The gateway crashes in this sync: a `gateway sync` process, SIGKILLed.
                if let running = runningPlugin {
                    runningPlugin = nil
                    await close(running)
                }
                let skip = Int.random(in: 0..<4, using: &random)
                let delay = Duration.microseconds(Int.random(in: 0..<3_000, using: &random))
                let result = try await process.crashingSync(entry: store.configuration(zone: HistoryRun.zone.zoneName), skip: skip, delay: delay, run: step)
                let held = heldInCloud
                let cloudNow = try await lookAtCloud()
                oracle.synced(store: store.name, held: held, cloud: values(of: cloudNow))
                outcome.syncs += 1
                for record in result.conflicts {
                    conflicts.withLock { $0[record, default: []].append(HistoryOracle.Conflict(step: step, store: store.name)) }
                }
                switch result.ending {
                case .killed(let phases):
                    oracle.syncInterrupted(store: store.name, step: step)
                    outcome.crashes += 1
                    outcome.failedSyncs += 1
                    outcome.history.append("\(step): \(store.name) syncs in a gateway process, SIGKILLed after \(phases) phase starts")
                case .finished(let status):
                    if status == 0 {
                        oracle.syncSucceeded(store: store.name, step: step)
                    } else {
                        oracle.syncInterrupted(store: store.name, step: step)
                        outcome.failedSyncs += 1
                    }
                    outcome.history.append("\(step): \(store.name) syncs in a gateway process (exit \(status), before its kill)")
                }
                if trace { print("    \(step) \(store.name) gateway process \(result.ending), conflicts \(result.conflicts)\n      cloud: \(cloudNow.keys.sorted()); store: \(try await store.contents().keys.sorted())") }
            case 46..<76:
                let report = try await sync(store, faults: true)
                let held = heldInCloud
                let cloudNow = try await lookAtCloud()
                oracle.synced(store: store.name, held: held, cloud: values(of: cloudNow))
                if trace {
                    print("    \(step) \(store.name) sync \(report.outcome) up \(report.uploaded) del \(report.deletedRemotely) down \(report.downloaded)")
                    for (record, fields) in cloudNow.sorted(by: { $0.key < $1.key }) {
                        print("      cloud \(record): \(fields.compactMapValues { if case .string(let text) = $0 { text } else { nil } }.sorted { $0.key < $1.key })")
                    }
                    print("      store \(try await store.contents().sorted { $0.key < $1.key })")
                }
                outcome.syncs += 1
                if report.outcome != .synced {
                    oracle.syncInterrupted(store: store.name, step: step)
                    outcome.failedSyncs += 1
                } else {
                    oracle.syncSucceeded(store: store.name, step: step)
                }
                outcome.history.append("\(step): \(store.name) syncs (\(report.outcome == .synced ? "synced" : "failed"), \(report.conflictCount) conflicts)")
            case 76..<85:
                let path = folder.appendingPathComponent("\(store.name)-backup-\(step)").path
                try await store.backup(to: path)
                backups[store.name, default: []].append((path, step))
                outcome.history.append("\(step): backup of \(store.name)")
            case 85..<92:
                let backup = backups[store.name]!.randomElement(using: &random)!
                var how = ""
                if store === d, Bool.random(using: &random) {
                    try await d.restore(from: backup.path, dataOnly: true)
                    how = " (rows only, without the triggers)"
                } else {
                    try await store.restore(from: backup.path)
                }
                _ = try await lookAtCloud()
                oracle.restore(store: store.name, toStep: backup.step, atStep: step, seenInCloud: seenInCloud)
                outcome.restores += 1
                outcome.history.append("\(step): \(store.name) restored from its backup of step \(backup.step)\(how)")
            case 92..<95:
                // NTP steps the clock, a VM resumes, an operator sets the time: up to two hours
                // either way from the true time, for the gateway. (Files keep the kernel's time:
                // a write under a stepped clock stamps its modification and status change times
                // alike, which a process cannot imitate; `JSONFolderStoreTests` covers that.)
                let offset = TimeInterval(Int.random(in: -7200...7200, using: &random))
                clockOffset.withLock { $0 = offset }
                outcome.clockSteps += 1
                outcome.history.append("\(step): the clock is set \(Int(offset)) s from the true time")
            default:
                // A column added, dropped or renamed (values and all, as `RENAME COLUMN` does).
                let changed = schemaStores.randomElement(using: &random)!
                let present = historyOptionalColumns.filter(changed.fields.contains)
                let absent = historyOptionalColumns.filter { !changed.fields.contains($0) }
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    guard let column = absent.randomElement(using: &random) else { continue }
                    try await changed.addColumn(column)
                    outcome.history.append("\(step): \(changed.name) gains column \(column)")
                case 1:
                    guard let column = present.randomElement(using: &random) else { continue }
                    try await changed.dropColumn(column)
                    _ = try await lookAtCloud()
                    oracle.dropColumn(store: changed.name, field: column, seenInCloud: seenInCloud)
                    outcome.history.append("\(step): \(changed.name) drops column \(column)")
                default:
                    guard let column = present.randomElement(using: &random), let newName = absent.randomElement(using: &random) else { continue }
                    let values = try await changed.contents().compactMapValues { $0[column] }
                    try await changed.renameColumn(column, to: newName)
                    _ = try await lookAtCloud()
                    oracle.renameColumn(step: step, store: changed.name, field: column, to: newName, values: values, seenInCloud: seenInCloud)
                    outcome.history.append("\(step): \(changed.name) renames column \(column) to \(newName)")
                }
                outcome.schemaChanges += 1
            }
        }

        // Quiet rounds: no faults, every store in turn, until nothing moves.
        if let running = runningPlugin {
            runningPlugin = nil
            await close(running)
        }
        stepNow.withLock { $0 = steps + 1 }
        for round in 0..<8 {
            var moved = 0
            for store in stores {
                let report = try await sync(store, faults: false)
                if trace {
                    print("    quiet \(round) \(store.name) sync \(report.outcome) up \(report.uploaded) del \(report.deletedRemotely) down \(report.downloaded)")
                    let cloudNow = try await zoneContents(of: embedded, zone: HistoryRun.zone)
                    for (record, fields) in cloudNow.sorted(by: { $0.key < $1.key }) {
                        print("      cloud \(record): \(fields.compactMapValues { if case .string(let text) = $0 { text } else { nil } }.sorted { $0.key < $1.key })")
                    }
                    print("      store \(try await store.contents().sorted { $0.key < $1.key })")
                }
                outcome.syncs += 1
                guard report.outcome == .synced else {
                    outcome.anomalies.append((.divergence, "a quiet sync of \(store.name) failed: \(String(describing: report.error))"))
                    continue
                }
                moved += report.downloaded + report.deletedLocally + report.uploaded + report.deletedRemotely
            }
            if moved == 0 { break }
            if round == 7 { outcome.anomalies.append((.divergence, "the stores kept exchanging changes after 8 quiet rounds")) }
        }

        if let running = runningPlugin {
            runningPlugin = nil
            await close(running)
        }

        var final: [String: [String: String]] = [:]
        for (record, fields) in try await zoneContents(of: cloud, zone: HistoryRun.zone) {
            var values: [String: String] = [:]
            for (field, value) in fields { if case .string(let text) = value { values[field] = text } }
            final[record] = values
        }
        for store in stores {
            let held = try await store.contents()
            var expected: [String: [String: String]] = [:]
            for (record, values) in final { expected[record] = values.filter { store.fields.contains($0.key) } }
            if held != expected {
                let differing = Set(held.keys).union(expected.keys).filter { held[$0] != expected[$0] }.sorted()
                let detail = differing.map { "\($0): store \(held[$0].map { "\($0)" } ?? "none"), cloud \(expected[$0].map { "\($0)" } ?? "none")" }
                outcome.anomalies.append((.divergence, "store \(store.name) differs from the cloud in \(detail.joined(separator: "; "))"))
            }
        }
        let reported = conflicts.get()
        outcome.conflicts = reported.values.reduce(0) { $0 + $1.count }
        outcome.anomalies += oracle.anomalies(final: final, conflicts: reported)
        return outcome
    }
}

/// Closes what an adapter holds open (a plugin process, pooled connections), as a gateway that
/// stops does.
private func close(_ adapter: any ModelAdapter) async {
    if let kit = adapter as? KitAdapter { await kit.close() }
    if let postgres = adapter as? PostgresAdapter { await postgres.close() }
}
